"""The words of a memory entry's fence (`<!-- memory:entry id=… origin=… -->`).

Memory entries write them; the secret guard must recognise them wherever the text goes
(a note pasted into a document, a collection of exported memory), so they live here.
"""

from __future__ import annotations

ORIGINS = ("assistant", "automatic", "learning", "cleanup", "restore")
SOURCES = ("page", "api", "chat", "bridge", "learning", "cleanup")
