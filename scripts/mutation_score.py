"""Print the score of the last `mutmut run` and list its surviving mutants (make mutate).

The score counts the mutants the tests ran against: killed / (killed + survived +
timeout). Mutants in code no selected test reaches are reported apart ("no tests"),
since more tests of other modules would be what catches them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")


def main() -> int:
    subprocess.run([MUTMUT, "export-cicd-stats"], cwd=ROOT, check=True)  # noqa: S603
    stats = json.loads((ROOT / "mutants" / "mutmut-cicd-stats.json").read_text())
    tested = stats["killed"] + stats["survived"] + stats["timeout"]
    score = 100 * stats["killed"] / tested if tested else 0.0
    results = subprocess.run(  # noqa: S603
        [MUTMUT, "results"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    survivors = [line.split(":")[0].strip() for line in results.splitlines() if "survived" in line]
    print("\nSurviving mutants (`mutmut show NAME` prints the change):")
    for name in survivors:
        print(f"  {name}")
    print(
        f"\nMutation score: {score:.1f}% ({stats['killed']} killed, {stats['survived']} "
        f"survived, {stats['timeout']} timed out; {stats['no_tests']} in code no selected "
        f"test reaches; {stats['total']} mutants)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
