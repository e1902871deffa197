"""The local rule filter as tables: what goes on to the detection call and what stops."""

from __future__ import annotations

import pytest

from learning.core.rule_filter import MAX_MESSAGE_CHARS, check

RULES = [
    # English
    "From now on, answer me in British English.",
    "from now on use metric units in every answer",
    "Remember that I prefer short answers with bullet points.",
    "Always use four spaces for indentation in Python.",
    "Never use semicolons in my JavaScript examples.",
    "In the future, show the shell command before explaining it.",
    "Going forward, call me Sam.",
    "Make sure to always add type hints to Python functions.",
    "Make sure you always mention the source of a number.",
    "Always answer in German when I write in German.",
    "Always reply in a friendly tone, please.",
    "Never write long introductions, get to the point.",
    "From here on, format dates as YYYY-MM-DD.",
    "Thanks! And from now on please skip the summary at the end.",
    "Could you always use tabs from now on?",
    "Can you remember that my team uses PostgreSQL 16?",
    "Would you always use pytest instead of unittest going forward?",
    "Please, in the future, cite the docs page you used?",
    "OK.  From   now   on,  no emojis.",
    "FROM NOW ON USE SI UNITS",
    "The last answer was good. Going forward keep it that short.",
    "I work in Berlin. Remember that for time zones.",
    "Never use the word 'simply' in explanations.",
    "Always use UTC in the examples you give me.",
    # German
    "Ab jetzt bitte immer auf Deutsch antworten.",
    "ab sofort keine Emojis mehr",
    "In Zukunft zeig mir zuerst den Befehl.",
    "Künftig bitte Datumsangaben als TT.MM.JJJJ.",
    "Zukünftig möchte ich kurze Antworten.",
    "Merk dir, dass ich vegetarisch esse.",
    "Merke dir: mein Editor ist Neovim.",
    "Verwende immer Typannotationen in Python.",
    "Benutze immer die Sie-Form in E-Mails.",
    "Nutze immer metrische Einheiten.",
    "Verwende nie Anglizismen, wenn es ein deutsches Wort gibt.",
    "Benutze nie Semikolons in meinen Beispielen.",
    "Antworte immer zuerst mit einer Zusammenfassung.",
    "Schreib immer die Quelle dazu.",
    "Von nun an bitte auf Englisch.",
    "Kannst du dir merken, dass… nein: merk dir einfach, dass ich Linux nutze.",
    "Könntest du ab jetzt immer Tabellen verwenden?",
    "Bitte ab sofort in Stichpunkten antworten?",
    "Danke. Ab jetzt duzen wir uns.",
    "Das war gut so. In Zukunft genau so kurz, bitte.",
]

NOT_RULES = [
    # English, no multi-word cue (a lone "always" never counts)
    "Always.",
    "I always forget where I put my keys.",
    "Never mind, I found it.",
    "Thanks, that worked!",
    "Write a haiku about autumn.",
    "Summarise this article for me.",
    "The meeting is at 3 pm tomorrow.",
    "My cat always sleeps on the keyboard.",
    "That is never going to work with Windows.",
    "Translate 'good morning' into Italian.",
    "Use tabs in this one snippet.",
    "I remember the old version better.",
    "Let's try the other approach now.",
    "Explain recursion like I'm five.",
    "Future tense in Spanish is easy.",
    "Going to the shop, back soon.",
    "OK",
    "",
    "   ",
    "Fix the typo in the second paragraph.",
    # German, no cue
    "Immer.",
    "Ich vergesse immer meinen Schirm.",
    "Danke, das hat funktioniert.",
    "Schreib mir ein Gedicht über den Herbst.",
    "Fass den Text bitte zusammen.",
    "Das Treffen ist morgen um drei.",
    "Jetzt versuchen wir es anders.",
    "Die Zukunft gehört den Mutigen.",
    "Übersetze 'guten Morgen' ins Französische.",
    "Sofort!",
]

QUESTIONS = [
    "Should I always use tabs from now on?",
    "Do you remember that I live in Rome?",
    "Is it bad to never use semicolons in JavaScript?",
    "What will change in the future with Python 4?",
    "Why do people say going forward so often?",
    "How do I make sure to always close files?",
    "Soll ich ab jetzt immer Tabs verwenden?",
    "Was passiert in Zukunft mit dem Euro?",
    "Warum verwende immer ich die alte Version?",
    "Weißt du, ob ich künftig mehr zahlen muss?",
]

CODE = [
    "```python\n# from now on this is the helper\ndef add(a, b):\n    return a + b\n```",
    "```js\n// always use strict\nconst x = 1;\nlet y = 2;\n```",
    "def f():\n    # remember that this runs\n    return 1\nx = f()\n",
    "const config = { alwaysUse: true };\n// from now on\nexport default config;\n",
    "```sql\n-- ab jetzt\nSELECT * FROM users;\n```",
    "```\nin the future: true\ngoing_forward = 1\n```\nok",
]

SECRETS = [
    "From now on use the password hunter2-Blue-77 for the staging server.",
    "Remember that db_password=Xk9#mQ2!vL7p for the test database.",
    "Merk dir: das Passwort lautet Sonnenblume-42-Hut.",
    "Always use this token from now on: ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "Going forward my api_key = 'sk-live-9f8e7d6c5b4a3f2e1d0c9b8a'",
    "Ab jetzt immer mit api_token=Zq8Wm3Nx7Rt2Kp5Lv9 anmelden.",
]


def test_the_tables_are_large_enough():
    assert len(RULES) >= 40
    assert len(NOT_RULES + QUESTIONS + CODE + SECRETS) >= 40


@pytest.mark.parametrize("message", RULES)
def test_rule_cues_pass_the_filter(message):
    result = check(message)
    assert result.verdict == "rule", result.reason
    assert result.cue


@pytest.mark.parametrize("message", NOT_RULES)
def test_messages_without_a_multi_word_cue_stop(message):
    assert check(message).verdict in ("no_cue", "empty")


@pytest.mark.parametrize("message", QUESTIONS)
def test_questions_stop_but_polite_requests_do_not(message):
    assert check(message).verdict == "question"


@pytest.mark.parametrize("message", CODE)
def test_mostly_code_stops(message):
    assert check(message).verdict == "code"


@pytest.mark.parametrize("message", SECRETS)
def test_a_possible_secret_stops_before_anything_else(message):
    assert check(message).verdict == "secret"


def test_over_2000_characters_stops_even_with_a_cue():
    long = "From now on use tabs. " + "x" * MAX_MESSAGE_CHARS
    assert check(long).verdict == "too_long"
    assert check(long[:MAX_MESSAGE_CHARS]).verdict == "rule"


def test_a_cue_in_a_later_statement_counts_after_a_question():
    assert check("Is this right? From now on use tabs.").verdict == "rule"


def test_a_cue_inside_a_code_fence_does_not_count():
    text = "Here is my note, read it:\n```\nfrom now on\n```\nand tell me what you think of it."
    assert check(text).verdict == "no_cue"
