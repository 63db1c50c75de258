import kit, kit.mui, kit.neuronvote, kit.shortcut

s = kit.load_subject("zoo/base-m")  # a model by name: here a member of the tiny world
answers = s.answer("add", s.items("add", "test", n=50))
print(f"accuracy {answers.accuracy:.2f}, MUI {kit.mui.mui(s, answers, threshold='topk'):.2f}%")

con, un = (kit.load_model(f"zoo/base-m+{v}-sparse") for v in ("math-test-x5", "other-task"))
data = kit.shortcut.task_data(s.model, s.items("add", "test", n=50), 1)  # contaminated items
found = kit.shortcut.locate(con, un, s.model, data, group_size=64)  # eq. 3 + eq. 4
te = kit.shortcut.trustworthy_accuracy(con, s.model, data, found.ranked[:20])
print("shortcut neurons", found.ranked[:3], f"Ori {te.ori:.2f} -> TE {te.te:.2f}")

words = kit.neuronvote.concepts.world_role_sentences(n_per_task=10)  # words tagged NUM, NAME...
x, y = kit.neuronvote.concept_arrays(s.model, words, "NUM", "blocks.0.mlp.hook_post")
print("NeuronVote", kit.neuronvote.vote(x, y, s=10, gaussian_max_neurons=10).neuron_vote)
