"""Characters that display as nothing, and letters that display as other letters.

One definition for the secret guard (which must see a token split by an invisible
character) and for the untrusted-text wrappers (which must see a closing tag split or
spelt with look-alikes), so the two can never disagree about what a text says.
"""

from __future__ import annotations

import re

# Every format character (Unicode category Cf, checked against unicodedata in the tests),
# private-use characters (Co), variation selectors and the fillers that render empty.
INVISIBLE = re.compile(
    "["
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ue000-\uf8ff\ufe00-\ufe0f"
    "\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
    "]"
)

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

# Cyrillic and Greek letters that look like Latin ones, and slashes that look like "/".
# One character for one: a position in the folded text is the same position in the text.
LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁһӏԛԝАВЕКМНОРСТХУІЈЅαοριυνκτΑΒΕΖΗΙΚΜΝΟΡΤΥΧ\u2044\u2215\u29f8",
    "aeopcyxijsdhlqwABEKMHOPCTXYIJSaopiuvktABEZHIKMNOPTYX///",
)
