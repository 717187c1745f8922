"""ConfQuestions conversations played turn by turn through the chat engine of a given package copy.

What ``completion_confquestions.py`` and ``graph_spread_confquestions.py`` share: the off-topic
questions asked after each conversation (each list written after the previous ones; see
``completion_confquestions.py``), the conversations of our own, and the worker that plays them all
in a subprocess whose ``sys.path`` starts with the package copy to measure (HEAD's or this tree's):
``python -m harness.conversations --data DIR --store DIR --result FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[2]
OWN = ROOT / "benchmarks" / "completion_conversations.json"
OFF_TOPIC = {
    "en": ["What is the capital of France?", "Who wrote Hamlet?", "How do I bake a chocolate cake?"],
    "de": ["Was ist die Hauptstadt von Frankreich?", "Wer schrieb Hamlet?", "Wie backe ich einen Schokoladenkuchen?"],
}
# Written after the rules above were chosen, to check them on other requests that name nothing of the wiki;
# each is asked after the conversation too, by a second engine seeded with the conversation's history.
HELD_OUT_OFF_TOPIC = {
    "en": [
        "How do I cook spaghetti properly?", "Which house plants need little light?",
        "What will the weather be like this weekend?", "What is a good recipe for apple strudel?",
        "How long should an egg boil?", "Which dog breed suits a small apartment?",
        "How do I learn to play the guitar quickly?", "What helps against a headache?",
        "How many calories does a banana have?", "When do cherry trees bloom?",
    ],
    "de": [
        "Wie koche ich Spaghetti richtig?", "Welche Zimmerpflanzen brauchen wenig Licht?",
        "Wie wird das Wetter am Wochenende?", "Was ist ein gutes Rezept für Apfelstrudel?",
        "Wie lange muss ein Ei kochen?", "Welche Hunderasse passt zu einer kleinen Wohnung?",
        "Wie lerne ich am schnellsten Gitarre spielen?", "Was hilft gegen Kopfschmerzen?",
        "Wie viele Kalorien hat eine Banane?", "Wann blühen Kirschbäume?",
    ],
}  # fmt: skip
# Written on 2026-11-24, before the words that name no topic (filler, the measure of "how long") were left out
# of the scope rule's own words (scope._unsupported_request, deleted in issue 45) on the misses of the lists above: its
# check. Since issue 45 every list here is calibration data of benchmarks/calibrate_scope.py, not a check.
FRESH_OFF_TOPIC = {
    "en": [
        "How do I get red wine out of a carpet?", "What time does the sun set in winter?",
        "Which vegetables grow well on a balcony?", "How often should I water a cactus?",
        "What is the best way to fold a shirt?", "How far is the moon from the earth?",
        "Who invented the telephone?", "How do I tie a tie?",
        "What should I pack for a beach holiday?", "Why is the sky blue?",
        "How do I change a flat bicycle tyre?", "Which wine goes well with fish?",
        "How many hours of sleep does an adult need?", "What can I do against a cold?",
        "How do I remove rust from a knife?", "When is the best season to plant tulips?",
        "How do I keep my cat off the table?", "What is a healthy breakfast?",
        "How can I stop snoring?", "How hot should the oven be for pizza?",
    ],
    "de": [
        "Wie bekomme ich Rotwein aus dem Teppich?", "Wann geht im Winter die Sonne unter?",
        "Welches Gemüse wächst gut auf dem Balkon?", "Wie oft muss man einen Kaktus gießen?",
        "Wie faltet man ein Hemd am besten?", "Wie weit ist der Mond von der Erde entfernt?",
        "Wer hat das Telefon erfunden?", "Wie binde ich eine Krawatte?",
        "Was sollte ich für einen Strandurlaub einpacken?", "Warum ist der Himmel blau?",
        "Wie flicke ich einen platten Fahrradreifen?", "Welcher Wein passt zu Fisch?",
        "Wie viele Stunden Schlaf braucht ein Erwachsener?", "Was hilft gegen eine Erkältung?",
        "Wie entferne ich Rost von einem Messer?", "Wann pflanzt man am besten Tulpen?",
        "Wie halte ich meine Katze vom Tisch fern?", "Was ist ein gesundes Frühstück?",
        "Was hilft gegen Schnarchen?", "Wie heiß muss der Ofen für Pizza sein?",
    ],
}  # fmt: skip
# Written on 2026-11-24 after FRESH_OFF_TOPIC's misses were read; no rule was chosen on either list.
UNSEEN_OFF_TOPIC = {
    "en": [
        "How do I remove a coffee stain from a white blouse?", "What is the fastest way to fall asleep?",
        "Which fruits are in season in autumn?", "How do I train for my first marathon?",
        "What should I name my new puppy?", "How can I make my bread rise better?",
        "Why do leaves change colour in autumn?", "How do I start a vegetable garden?",
        "What is a good gift for my grandmother?", "How many eggs go into a pancake batter?",
        "How do I list my old furniture for sale?", "Which shoes are best for hiking?",
        "How often should I wash my hair?", "What temperature is ideal for a bedroom at night?",
        "How do I run faster over short distances?", "Why does my phone battery drain so quickly?",
        "How do I get rid of ants in the kitchen?", "What goes well with grilled salmon?",
        "How long can cooked rice stay in the fridge?", "Which board games are fun for four players?",
    ],
    "de": [
        "Wie entferne ich einen Kaffeefleck von einer weißen Bluse?", "Wie schlafe ich am schnellsten ein?",
        "Welche Früchte haben im Herbst Saison?", "Wie trainiere ich für meinen ersten Marathon?",
        "Wie soll ich meinen neuen Welpen nennen?", "Wie geht mein Brot besser auf?",
        "Warum verfärben sich die Blätter im Herbst?", "Wie lege ich einen Gemüsegarten an?",
        "Was ist ein gutes Geschenk für meine Großmutter?", "Wie viele Eier kommen in einen Pfannkuchenteig?",
        "Wie verkaufe ich meine alten Möbel?", "Welche Schuhe eignen sich am besten zum Wandern?",
        "Wie oft sollte ich meine Haare waschen?", "Welche Temperatur ist nachts ideal für ein Schlafzimmer?",
        "Wie laufe ich auf kurzen Strecken schneller?", "Warum ist der Akku meines Handys so schnell leer?",
        "Wie werde ich Ameisen in der Küche los?", "Was passt gut zu gegrilltem Lachs?",
        "Wie lange hält gekochter Reis im Kühlschrank?", "Welche Brettspiele machen zu viert Spaß?",
    ],
}  # fmt: skip
# Written on 2026-11-25, before that day's scope rule was chosen on the other lists' misses: the check.
LATER_OFF_TOPIC = {
    "en": [
        "How do I descale a kettle?", "What is the best time of year to visit Portugal?",
        "How much should I tip a waiter?", "Which exercises strengthen the lower back?",
        "How do I get my toddler to eat vegetables?", "What is the difference between baking soda and baking powder?",
        "How do I clean a cast iron pan?", "Why do cats purr?",
        "How can I save money on groceries?", "What should I wear to a job interview?",
        "How do I stop my glasses from fogging up?", "Which flowers attract bees?",
        "How long does it take to learn to swim?", "What is a good book for a long flight?",
        "How do I make cold brew coffee?", "Why do onions make you cry?",
        "How can I improve my handwriting?", "What do I need for a picnic?",
        "How do I unclog a kitchen sink?", "When should I replace my running shoes?",
    ],
    "de": [
        "Wie entkalke ich einen Wasserkocher?", "Wann ist die beste Reisezeit für Portugal?",
        "Wie viel Trinkgeld gibt man im Restaurant?", "Welche Übungen stärken den unteren Rücken?",
        "Wie bringe ich mein Kleinkind dazu, Gemüse zu essen?", "Was ist der Unterschied zwischen Natron und Backpulver?",
        "Wie reinige ich eine gusseiserne Pfanne?", "Warum schnurren Katzen?",
        "Wie kann ich beim Einkaufen Geld sparen?", "Was ziehe ich zu einem Vorstellungsgespräch an?",
        "Wie verhindere ich, dass meine Brille beschlägt?", "Welche Blumen locken Bienen an?",
        "Wie lange dauert es, schwimmen zu lernen?", "Was ist ein gutes Buch für einen langen Flug?",
        "Wie mache ich Cold Brew Kaffee?", "Warum muss man beim Zwiebelschneiden weinen?",
        "Wie kann ich meine Handschrift verbessern?", "Was brauche ich für ein Picknick?",
        "Wie mache ich einen verstopften Abfluss in der Küche frei?", "Wann sollte ich meine Laufschuhe ersetzen?",
    ],
}  # fmt: skip

# Written on 2026-11-25 (second session) as the check for that session's rules, before any was tried: a completer told
# which words no page holds (measured, not adopted) and the "it" of "does it take to" (adopted). The misses of
# "How long does it take to learn to swim?" were known when it was written, so it is blind to the first rule only.
LAST_OFF_TOPIC = {
    "en": [
        "How do I sharpen a kitchen knife?", "How do I get rid of hiccups?",
        "What is the best way to store fresh herbs?", "How long does it take to walk ten kilometres?",
        "Which birds sing before sunrise?", "How do I teach my dog to sit?",
        "What should I cook for a vegetarian dinner party?", "How can I keep my house cool in summer?",
        "Why does bread go stale?", "How do I polish silver cutlery?",
        "What is a good name for a sailing boat?", "How often should I mow the lawn?",
        "How do I wrap a present neatly?", "Which cheese goes with red wine?",
        "How do I stop a door hinge from squeaking?", "What helps against sunburn?",
        "How do I choose a ripe avocado?", "Is it safe to swim right after eating?",
        "How can I learn to juggle?", "Which mountains in Austria are best for skiing?",
    ],
    "de": [
        "Wie schärfe ich ein Küchenmesser?", "Was hilft gegen Schluckauf?",
        "Wie bewahre ich frische Kräuter am besten auf?", "Wie lange braucht man zu Fuß für zehn Kilometer?",
        "Welche Vögel singen vor Sonnenaufgang?", "Wie bringe ich meinem Hund bei, Sitz zu machen?",
        "Was koche ich für ein vegetarisches Abendessen mit Gästen?", "Wie halte ich meine Wohnung im Sommer kühl?",
        "Warum wird Brot altbacken?", "Wie poliere ich Silberbesteck?",
        "Was ist ein guter Name für ein Segelboot?", "Wie oft sollte man den Rasen mähen?",
        "Wie verpacke ich ein Geschenk ordentlich?", "Welcher Käse passt zu Rotwein?",
        "Was hilft gegen eine quietschende Tür?", "Was hilft gegen Sonnenbrand?",
        "Woran erkenne ich eine reife Avocado?", "Darf man direkt nach dem Essen schwimmen gehen?",
        "Wie lerne ich jonglieren?", "Welche Berge in Österreich eignen sich am besten zum Skifahren?",
    ],
}  # fmt: skip


# Each asked after every conversation by its own engine, seeded with the conversation's history.
LATER_OFF_TOPIC_LISTS = {
    "held_out_off_topic": HELD_OUT_OFF_TOPIC,
    "fresh_off_topic": FRESH_OFF_TOPIC,
    "unseen_off_topic": UNSEEN_OFF_TOPIC,
    "later_off_topic": LATER_OFF_TOPIC,
    "last_off_topic": LAST_OFF_TOPIC,
}


def worker(data: Path, store_dir: Path, out: Path) -> None:
    """Play every conversation through the engine of the package first on ``sys.path``; write JSON."""
    from harness.store import open_all_store
    from llama_index_ragonite import RagoniteChatEngine
    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.prompts import OUT_OF_SCOPE
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    questions = load_questions(data)
    retriever = HybridRetriever.from_store(open_all_store(store_dir, data), k_lexical=10, k_dense=10, top_n=10)
    conversations: Dict[tuple, list] = {}
    for i, q in enumerate(questions):
        conversations.setdefault((q.conv_id, q.lang), []).append(i)
    own = json.loads(OWN.read_text(encoding="utf-8"))["conversations"]
    turns: List[dict] = [{} for _ in questions]
    result = dict(turns=turns, off_topic=[], own=[], package=None, **{key: [] for key in LATER_OFF_TOPIC_LISTS})
    start = time.perf_counter()

    def play(engine, message):
        r = engine.chat(message)
        return dict(
            completed=r.completed_question,
            urls=[n.node.metadata.get("url", "") for n in r.source_nodes],
            title=r.source_nodes[0].node.metadata.get("title") if r.source_nodes else None,
            out_of_scope=OUT_OF_SCOPE.rstrip(".") in r.response,
            choice=(r.metadata.get("retrieval") or {}).get("choice", ""),
            answer=r.response[:2000],
        )

    for n, ((_, lang), indices) in enumerate(conversations.items()):
        engine = RagoniteChatEngine.from_defaults(retriever, follow_ups=0)
        for i in indices:
            turns[i] = play(engine, questions[i].question)
        history = list(engine.chat_history)
        result["off_topic"].append(play(engine, OFF_TOPIC[lang][n % len(OFF_TOPIC[lang])]))
        for key, later in LATER_OFF_TOPIC_LISTS.items():
            side = RagoniteChatEngine.from_defaults(retriever, chat_history=history, follow_ups=0)
            question = later[lang][n % len(later[lang])]
            result[key].append(dict(play(side, question), question=question))
    for conversation in own:
        engine = RagoniteChatEngine.from_defaults(retriever, follow_ups=0)
        result["own"].append([play(engine, turn["q"]) for turn in conversation["turns"]])
    result["wall_s"] = time.perf_counter() - start
    result["package"] = str(Path(sys.modules["llama_index_ragonite"].__file__).parent)
    out.write_text(json.dumps(result), encoding="utf-8")


def run_worker(package_parent: Path, args, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package_parent), str(ROOT), str(ROOT / "benchmarks")]))
    command = [sys.executable, "-m", "harness.conversations", "--data", str(args.data), "--store", str(args.store)]
    subprocess.run(command + ["--result", str(out)], check=True, env=env, cwd=str(package_parent))
    result = json.loads(out.read_text(encoding="utf-8"))
    if Path(result["package"]).parent.resolve() != package_parent.resolve():
        raise SystemExit(f"worker imported {result['package']}, not the package under {package_parent}")
    return result


if __name__ == "__main__":  # the worker: runs the baseline's package too
    ap = argparse.ArgumentParser(prog="python -m harness.conversations")
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--result", type=Path, required=True)
    args = ap.parse_args()
    worker(args.data, args.store, args.result)
