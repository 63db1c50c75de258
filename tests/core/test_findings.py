from kit.core.findings import Section, findings_text, publish


def test_findings_text_bullets_and_continuations():
    text = findings_text(["MUI 3.2%", "Corollaries:", "  C1 agrees"], title="F:")
    assert text == "F:\n- MUI 3.2%\n- Corollaries:\n  C1 agrees"


def test_publish_saves_records_and_appends(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    class Run:
        def __init__(self):
            self.saved, self.recorded = [], {}

        def save_figure(self, fig, name):
            self.saved.append(name)

        def record(self, **kw):
            self.recorded.update(kw)

    run, findings = Run(), ["earlier"]
    fig = plt.figure()
    sec = publish(
        run, Section(record={"x": 1}, findings=["x is 1"], figures={"fig_x": fig}), findings
    )
    plt.close(fig)
    assert run.saved == ["fig_x"] and run.recorded == {"x": 1} and findings == ["earlier", "x is 1"]
    assert sec.record == {"x": 1}
