"""The words of the embedded world's tasks: the number range, the word pools the task generators
draw from (names, objects, places, brackets, relations and their values), the 400 invented entities
of the knowledge base, and :func:`all_words`, every word any task can emit (the tokenizer's
vocabulary: each word is exactly one token).
"""

from __future__ import annotations

MAX_NUMBER = 63  # numbers 0..63 are whole-word tokens

# ---------------------------------------------------------------- word pools
AGENTS = ["tom", "ann", "bob", "eve", "sam", "kim", "joe", "liz"]
OBJECTS = ["apples", "coins", "books", "cards", "shells", "stamps"]
IOI_FREQUENT = ["mary", "john", "alice", "peter", "susan", "david", "laura", "james"]
IOI_RARE = ["olga", "ivan", "nadia", "boris", "greta", "hugo", "ingrid", "otto"]
IOI_PLACES = ["store", "park", "school", "garden", "station", "beach"]
IOI_THINGS = ["drink", "book", "ball", "gift", "key", "letter"]
FRUITS = ["apple", "pear", "plum", "grape", "lemon", "mango"]
ANIMALS = ["dog", "cat", "fish", "bird", "mouse", "horse"]
ORDINALS = ["1st", "2nd", "3rd", "4th", "5th"]
BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
RELATIONS = {
    "color": ["red", "blue", "green", "pink", "black", "white", "gray", "brown"],
    "city": ["paris", "rome", "oslo", "lima", "cairo", "tokyo", "delhi", "quito"],
    "food": ["rice", "bread", "soup", "cheese", "beans", "fish", "eggs", "salad"],
    "tool": ["hammer", "saw", "drill", "brush", "knife", "rope", "spade", "lamp"],
}
LETTERS = ["A", "B", "C", "D"]
# Entities are two-word invented names (20 x 20 = 400 entities, 1600 facts): big enough that
# fact recall does not saturate within the zoo's training budget, at 40 vocabulary words.
_FIRST = [
    "ba",
    "de",
    "fi",
    "go",
    "ku",
    "la",
    "me",
    "ni",
    "po",
    "ru",
    "sa",
    "te",
    "vi",
    "wo",
    "za",
    "bo",
    "di",
    "fe",
    "ga",
    "ho",
]
_LAST = [
    "rak",
    "lun",
    "mip",
    "tos",
    "vek",
    "zur",
    "dal",
    "fim",
    "gop",
    "hes",
    "kib",
    "lor",
    "nax",
    "pud",
    "rif",
    "sev",
    "tam",
    "wen",
    "yol",
    "zik",
]


def _entities() -> list[str]:
    """400 invented two-word entity names, a fixed list."""
    return [f"{a} {b}" for a in _FIRST for b in _LAST]


ENTITIES = _entities()


def all_words() -> list[str]:
    """Every word any task can emit, in a fixed order (the tokenizer's vocabulary)."""
    words = [str(i) for i in range(MAX_NUMBER + 1)]
    words += AGENTS + OBJECTS + IOI_FREQUENT + IOI_RARE + IOI_PLACES + IOI_THINGS
    words += FRUITS + ANIMALS + ORDINALS + list(BRACKETS) + list(BRACKETS.values()) + LETTERS
    words += list(RELATIONS) + [v for vals in RELATIONS.values() for v in vals] + _FIRST + _LAST
    words += ["true", "false", "not", "and", "or", "x", "y", "z", "n", "m", "k", "max"]
    text = " ".join(
        [
            # template words, listed once: a test checks every generated item is covered
            "has . gets more how many does have ? had and then found what is the total number of",
            "there are in a box bag all starts with , finds loses left holds added taken out",
            "gives to now are the run : = ; print + - * if > else output",
            "evaluate result true or false close next brackets closing bracket complete with",
            "sort smallest order from small large item numbers after sorting one",
            "i see fruits list count basket",
            "when went gave were at handed reached passed answer",
        ]
    )
    words += text.split()
    seen: dict[str, None] = {}
    for w in words:
        seen.setdefault(w, None)
    return list(seen)
