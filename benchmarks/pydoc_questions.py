"""A second retrieval set: the Python language reference topics that CPython ships.

Corpus: `pydoc_data.topics` (79 topics of the language reference, part of every Python
install). Questions and judgements: written by hand for this benchmark, before any
retriever was run on them, and not changed after; each names the topic(s) that answer
it (2 = the topic about it, 1 = a topic that also answers it). Many are phrased
without the topic's own keyword, as people ask.
"""

from __future__ import annotations

QUESTIONS: list[tuple[str, dict[str, int]]] = [
    ("How do I check a condition while debugging that disappears when optimised?", {"assert": 2}),
    ("leave a loop early before it has gone through all items", {"break": 2}),
    ("skip the rest of this iteration and go on with the next one", {"continue": 2}),
    ("remove a name binding or an item from a list", {"del": 2}),
    ("How can a function assign to a module-level variable?", {"global": 2}),
    ("rebind a variable of the enclosing function from a nested function", {"nonlocal": 2}),
    ("small anonymous function made of a single expression", {"lambda": 2}),
    (
        "run setup and teardown code around a block automatically",
        {"with": 2, "context-managers": 1},
    ),
    ("what do __enter__ and __exit__ have to return", {"context-managers": 2, "with": 1}),
    ("catch an error and always run cleanup code whatever happens", {"try": 2}),
    ("throw an error and say which other error caused it", {"raise": 2}),
    ("what happens when an error is not handled anywhere", {"exceptions": 2}),
    ("how does Python find and load a module", {"import": 2}),
    ("produce values one at a time from a function that pauses", {"yield": 2}),
    ("suspend a coroutine until another awaitable finishes", {"await": 2}),
    ("asynchronous loops and asynchronous context managers", {"async": 2}),
    (
        "pad a number with zeros and choose the decimal places when formatting",
        {"formatstrings": 2},
    ),
    ("split text on a separator or strip spaces from its ends", {"string-methods": 2}),
    ("take part of a sequence with a start, a stop and a step", {"slicings": 2}),
    ("can I write a < b < c to compare three values", {"comparisons": 2}),
    ("does or stop evaluating once the left side is true", {"booleans": 2}),
    ("which values count as false in a condition", {"truth": 2}),
    ("build a new list from a loop and a condition in one expression", {"lists": 2}),
    ("write a dictionary literal with key value pairs", {"dict": 2}),
    (
        "look up a key with a default value or merge another mapping into a dictionary",
        {"typesmapping": 2},
    ),
    ("add, insert or pop elements of a list in place", {"typesseq-mutable": 2}),
    ("how to write very large or very small decimal numbers with an exponent", {"floating": 2}),
    ("write whole numbers in hexadecimal, octal or binary", {"integers": 2}),
    ("raise a number to a power and how it binds with a minus sign", {"power": 2}),
    ("move the bits of an integer to the left or right", {"shifting": 2}),
    ("exclusive or of two integers bit by bit", {"bitwise": 2}),
    ("which operator binds more tightly than another", {"operator-summary": 2}),
    ("define a new type with base classes", {"class": 2}),
    (
        "give a parameter a default value and annotate its type",
        {"function": 2, "calls": 1},
    ),
    ("control how an object is printed, hashed and compared for equality", {"customization": 2}),
    ("intercept reading an attribute that does not exist", {"attribute-access": 2}),
    ("step through a program line by line and set breakpoints", {"debugger": 2}),
    ("how are names looked up in nested blocks and what is a scope", {"naming": 2, "execmodel": 1}),
    ("which words are reserved and cannot be used as names", {"identifiers": 2}),
    ("backslashes in string literals and raw strings", {"strings": 2}),
    ("run one of several branches depending on conditions", {"if": 2}),
    ("repeat a block as long as a condition holds", {"while": 2}),
    ("iterate over the items of a sequence", {"for": 2}),
    ("a statement that does nothing, as a placeholder", {"pass": 2}),
    ("leave a function and hand a value back to the caller", {"return": 2}),
    ("get an element by index with square brackets", {"subscriptions": 2}),
    ("pass arguments by keyword and unpack a list into positional arguments", {"calls": 2}),
    ("the attribute holding an object's namespace dictionary and its class", {"specialattrs": 2}),
    ("increment a variable in place with +=", {"augassign": 2}),
    ("unpack a tuple into several variables in one assignment", {"assignment": 2}),
    ("the object that stands for the absence of a value", {"bltin-null-object": 2}),
    ("make my own class support addition with reflected operands", {"numeric-types": 2}),
]
