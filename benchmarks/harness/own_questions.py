"""Questions of our own over ``examples/sample_wiki`` that the answer and speed benchmarks share."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

SAMPLE_WIKI = Path(__file__).resolve().parents[2] / "examples" / "sample_wiki"

# Own questions over examples/sample_wiki (written for this check, not tuned on): (lang, question,
# expected words, all of which the answer must hold; [] = out of scope).
OWN_QUESTIONS: List[Tuple[str, str, List[str]]] = [
    ("en", "Which firmware does the Lenovo T14 run in the Aurora 2.0 release testing?", ["1.32"]),
    ("en", "Which platform failed the UEFI OTA upgrade in Aurora 2.0?", ["Lenovo T14"]),
    ("en", "Which firmware did the Dell OptiPlex 7070 have in the Aurora 1.9 tests?", ["2.0.4"]),
    ("en", "Who owns the OTA server?", ["Bob"]),
    ("en", "What is the default poll interval of the OTA server?", ["6h"]),
    ("en", "Where are the OTA server settings read from?", ["/etc/aurora/ota.toml"]),
    ("en", "How long does the security training take?", ["two hours"]),
    ("en", "Who grants access to the build server?", ["Dana"]),
    ("en", "Where is the installer log written?", ["/var/log/aurora-install.log"]),
    ("en", "What should I do if devices reject the manifest?", ["signing key"]),
    ("en", "Which Raspberry Pi model was tested for Aurora 2.0?", []),
    ("en", "What is the default value of max_retries on the OTA server?", []),
    ("en", "Who won the 2018 football world cup?", []),
    ("de", "Welche Firmware hat das Lenovo T14 in den Aurora-2.0-Tests?", ["1.32"]),
    ("de", "Wer ist für den OTA-Server zuständig?", ["Bob"]),
    ("de", "Wie oft fragen die Geräte beim OTA-Server nach Updates?", ["six hours"]),
    ("de", "Wie lange dauert die Sicherheitsschulung?", ["two hours"]),
    ("de", "Wer vergibt den Zugang zum Build-Server?", ["Dana"]),
    ("de", "Welche Firmware hatte das HP EliteBook 840 in den Aurora-Tests?", []),
    ("de", "Wie hoch ist der Eiffelturm?", []),
]
