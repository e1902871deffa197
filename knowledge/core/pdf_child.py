"""Child process: read one PDF from stdin with pypdf and print its pages as JSON.

Run by knowledge.core.extract under a memory limit and a timeout, so a hostile
PDF can only take this process down, never a worker.
"""

from __future__ import annotations

import io
import json
import sys


def main(data: bytes, max_chars: int) -> int:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            print(json.dumps({"error": "PDF is encrypted (password-protected)"}))
            return 0
        pages = []
        total = 0
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            total += len(text)
            if total > max_chars:
                print(json.dumps({"error": "PDF holds more text than one scan may extract"}))
                return 0
            pages.append([number, text])
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as error:
        print(json.dumps({"error": f"PDF could not be read ({type(error).__name__})"}))
        return 0
    print(json.dumps({"pages": pages}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin.buffer.read(), int(sys.argv[1])))
