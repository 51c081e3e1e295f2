"""Sample pairs, NLI, paraphrase, Chinese and wiki1m files for ``data/samples/``.

These writers produce a data root in the same layout and
file formats as ``../shared/data`` (so the same loaders read it) from sentence templates
defined here — no text from any real dataset. The output is deterministic: every
dataset draws from its own seeded generator, and the tests regenerate the folder and
compare it byte for byte with the committed copy.

What it holds (a smoke profile runs every chapter on it):

- scored pairs: STS12-16 (every subset file, STS15/16 with unscored rows to drop),
  STS Benchmark and SICK (train/dev/test each), so the 7-task STS evaluation runs;
  Chinese STS-B (CNSD format);
- NLI: SNLI (train JSON lines with some no-gold-label rows; tokenized dev/test TSVs) and
  MultiNLI (train, dev matched/mismatched), hence AllNLI triplets too;
- paraphrase pairs: MRPC, QQP, SimCLUE;
- plain sentences: wiki1m (full file and prefix).

Scores follow how much of a scene two sentences share (the same words reordered, a slot
made more general, a place, an activity or the whole scene replaced), with a little seeded
noise, so even a tiny model finds some signal.
Everything loaded from here is marked ``sample=True`` (the ``SAMPLE_DATA.md`` marker).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

# --------------------------------------------------------------------------------------
# Templates. A scene is (subject, activity, place); each slot has a general form (for
# entailment and near-paraphrase) and the activity has an incompatible one (contradiction).


@dataclass(frozen=True)
class Slot:
    text: str
    general: str
    opposite: str = ""


SUBJECTS = [
    Slot("A man", "A person"),
    Slot("A woman", "A person"),
    Slot("A boy", "A child"),
    Slot("A girl", "A child"),
    Slot("An old man", "An elderly person"),
    Slot("A young woman", "A person"),
    Slot("A tall man", "A man"),
    Slot("A chef", "A cook"),
    Slot("A teacher", "An adult"),
    Slot("A musician", "An artist"),
    Slot("A student", "A young person"),
    Slot("A police officer", "An officer"),
]
ACTIVITIES = [
    Slot("is playing a guitar", "is making music", "is sleeping in a bed"),
    Slot("is riding a bicycle", "is riding", "is sitting on a sofa"),
    Slot("is reading a newspaper", "is reading", "is swimming in a lake"),
    Slot("is cooking pasta", "is preparing food", "is driving a truck"),
    Slot("is painting a fence", "is painting", "is eating a sandwich"),
    Slot("is throwing a red ball", "is playing with a ball", "is typing on a laptop"),
    Slot("is climbing a rock wall", "is climbing", "is lying on the grass"),
    Slot("is slicing an onion", "is cutting a vegetable", "is singing on a stage"),
    Slot("is walking a small dog", "is walking with an animal", "is washing the dishes"),
    Slot("is carrying a heavy box", "is carrying something", "is dancing at a party"),
    Slot("is fixing a car", "is repairing a vehicle", "is watching television"),
    Slot("is writing a letter", "is writing", "is running a marathon"),
]
PLACES = [
    Slot("in the park", "outdoors"),
    Slot("on a busy street", "in a city"),
    Slot("near the beach", "by the sea"),
    Slot("in a small kitchen", "indoors"),
    Slot("at the train station", "in a public place"),
    Slot("in the garden", "outside"),
    Slot("on the roof", "up high"),
    Slot("in the snow", "in winter"),
]
REASONS = [
    "for their friends",
    "to win a prize",
    "after a long day",
    "before the storm",
    "for the first time",
    "while waiting for a bus",
]


def scene(rng: random.Random) -> tuple[Slot, Slot, Slot]:
    return rng.choice(SUBJECTS), rng.choice(ACTIVITIES), rng.choice(PLACES)


def sentence(subject: str, activity: str, place: str = "") -> str:
    return " ".join(x for x in (subject, activity, place) if x) + "."


def tokenized(text: str) -> str:
    """InferSent-style tokenization of our templates: a space before the final period."""
    return text[:-1] + " ." if text.endswith(".") else text


def scored_pair(rng: random.Random, low: float, high: float) -> tuple[str, str, float]:
    """A pair and its similarity on [low, high]: the more template slots differ, the lower."""
    subject, activity, place = scene(rng)
    first = sentence(subject.text, activity.text, place.text)
    changes = rng.randrange(6)
    if changes == 0:  # the same words in another order
        second = (
            f"{place.text[0].upper()}{place.text[1:]}, {subject.text[0].lower()}{subject.text[1:]} {activity.text}."
        )
        level = 0.95
    elif changes == 1:  # a more general subject
        second = sentence(subject.general, activity.text, place.text)
        level = 0.8
    elif changes == 2:  # a more general activity
        second = sentence(subject.text, activity.general, place.text)
        level = 0.6
    elif changes == 3:  # another place, a more general subject
        other = rng.choice([p for p in PLACES if p != place])
        second = sentence(subject.general, activity.text, other.text)
        level = 0.4
    elif changes == 4:  # another activity
        other = rng.choice([a for a in ACTIVITIES if a != activity])
        second = sentence(subject.text, other.text, place.text)
        level = 0.2
    else:  # another scene
        s2, a2, p2 = scene(rng)
        second = sentence(s2.text, a2.text, p2.text)
        level = 0.0
    noisy = min(1.0, max(0.0, level + rng.uniform(-0.06, 0.06)))
    return first, second, low + noisy * (high - low)


# --------------------------------------------------------------------------------------
# Writers, one per file format of the real layout.


class SampleWriter:
    """Collects the sample files: path relative to the sample root -> text."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def add(self, relpath: str, lines: list[str]) -> None:
        self.files[relpath] = "".join(line + "\n" for line in lines)


def write_sts_year(w: SampleWriter, rng: random.Random, year: int, subsets: list[str], scored: int, unscored: int):
    for subset in subsets:
        rows = []
        for _ in range(scored):
            a, b, score = scored_pair(rng, 0.0, 5.0)
            rows.append(f"{score:.3f}\t{a}\t{b}")
        for _ in range(unscored):
            a, b, _ = scored_pair(rng, 0.0, 5.0)
            rows.insert(rng.randrange(len(rows) + 1), f"\t{a}\t{b}")
        w.add(f"sts/{year}/{subset}.test.tsv", rows)


def write_stsbenchmark(w: SampleWriter, rng: random.Random, sizes: dict[str, int]):
    genres = [
        ("main-captions", "MSRvid", "2012test"),
        ("main-news", "headlines", "2015"),
        ("main-forums", "answers-forums", "2015"),
    ]
    for split, n in sizes.items():
        rows = []
        for sid in range(n):
            genre, file, year = genres[sid % len(genres)]
            a, b, score = scored_pair(rng, 0.0, 5.0)
            rows.append(f"{genre}\t{file}\t{year}\t{sid:04d}\t{score:.3f}\t{a}\t{b}")
        w.add(f"stsbenchmark/sts-{split}.csv", rows)


def write_sick(w: SampleWriter, rng: random.Random, sizes: dict[str, int]):
    files = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
    pair_id = 1
    for split, n in sizes.items():
        rows = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        for _ in range(n):
            a, b, score = scored_pair(rng, 1.0, 5.0)
            label = "ENTAILMENT" if score >= 4.2 else "CONTRADICTION" if score <= 1.6 else "NEUTRAL"
            rows.append(f"{pair_id}\t{a}\t{b}\t{score:.1f}\t{label}")
            pair_id += 1
        w.add(f"sick2014/{files[split]}", rows)


def nli_triples(rng: random.Random, n_premises: int, no_gold: int) -> list[tuple[str, str, str]]:
    """(premise, hypothesis, gold label) rows: three hypotheses per premise, plus
    ``no_gold`` rows labelled '-' (no annotator majority), as SNLI ships them."""
    rows = []
    for _ in range(n_premises):
        subject, activity, place = scene(rng)
        premise = sentence(subject.text, activity.text, place.text)
        rows.append((premise, sentence(subject.general, activity.general), "entailment"))
        rows.append((premise, sentence(subject.text, activity.text, f"{place.text} {rng.choice(REASONS)}"), "neutral"))
        rows.append((premise, sentence(subject.text, activity.opposite), "contradiction"))
    for _ in range(no_gold):
        subject, activity, place = scene(rng)
        rows.insert(
            rng.randrange(len(rows) + 1),
            (sentence(subject.text, activity.text, place.text), sentence(subject.text, activity.text), "-"),
        )
    return rows


def write_snli(w: SampleWriter, rng: random.Random, train: tuple[int, int], dev: int, test: int):
    lines = []
    for i, (p, h, label) in enumerate(nli_triples(rng, *train)):
        annotators = [label] if label != "-" else ["neutral", "entailment", "contradiction"]
        lines.append(
            json.dumps(
                {
                    "annotator_labels": annotators,
                    "gold_label": label,
                    "pairID": f"sample{i}",
                    "sentence1": p,
                    "sentence2": h,
                }
            )
        )
    w.add("snli/snli_1.0_train.jsonl", lines)
    for split, n in (("dev", dev), ("test", test)):
        rows = ["premise\thypothesis\tlabel"]
        rows += [f"{tokenized(p)}\t{tokenized(h)}\t{label}" for p, h, label in nli_triples(rng, n, 0)]
        w.add(f"snli/snli_1.0_{split}.tokenized.tsv", rows)


def write_multinli(w: SampleWriter, rng: random.Random, sizes: dict[str, tuple[int, int]]):
    genres = ["fiction", "government", "slate", "telephone", "travel"]
    for split, (n, no_gold) in sizes.items():
        lines = []
        for i, (p, h, label) in enumerate(nli_triples(rng, n, no_gold)):
            lines.append(
                json.dumps(
                    {
                        "annotator_labels": [label if label != "-" else "neutral"],
                        "genre": genres[i % 5],
                        "gold_label": label,
                        "pairID": f"{i // 3}{'enc'[i % 3]}",
                        "promptID": i // 3,
                        "sentence1": p,
                        "sentence2": h,
                    }
                )
            )
        w.add(f"multinli/multinli_1.0_{split}.jsonl", lines)


def paraphrase_pair(rng: random.Random) -> tuple[str, str, int]:
    """A pair and 1 if it is a paraphrase (same scene, general words), else 0."""
    a, b, score = scored_pair(rng, 0.0, 1.0)
    return a, b, int(score >= 0.7)


def write_mrpc(w: SampleWriter, rng: random.Random, sizes: dict[str, int]):
    files = {"train": "msr-para-train.tsv", "dev": "msr-para-val.tsv", "test": "msr-para-test.tsv"}
    ident = 100000
    for split, n in sizes.items():
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for _ in range(n):
            a, b, label = paraphrase_pair(rng)
            rows.append(f"{label}\t{ident}\t{ident + 1}\t{a}\t{b}")
            ident += 2
        w.add(f"mrpc/{files[split]}", rows)


def write_qqp(w: SampleWriter, rng: random.Random, sizes: dict[str, int]):
    qid = 1
    for split, n in sizes.items():
        rows = ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"]
        for i in range(n):
            a, b, label = paraphrase_pair(rng)
            q1 = "Why " + a[0].lower() + a[1:-1] + "?"
            q2 = "Why " + b[0].lower() + b[1:-1] + "?"
            rows.append(f"{i}\t{qid}\t{qid + 1}\t{q1}\t{q2}\t{label}")
            qid += 2
        w.add(f"qqp/{split}.tsv", rows)


ZH_SUBJECTS = [
    Slot("一个男人", "一个人"),
    Slot("一个女人", "一个人"),
    Slot("一个男孩", "一个孩子"),
    Slot("一个女孩", "一个孩子"),
    Slot("一位老师", "一个大人"),
    Slot("两个学生", "两个人"),
]
ZH_ACTIVITIES = [
    Slot("弹吉他", "演奏音乐"),
    Slot("骑自行车", "骑车"),
    Slot("看报纸", "阅读"),
    Slot("做意大利面", "做饭"),
    Slot("刷栅栏", "刷漆"),
    Slot("遛小狗", "遛狗"),
]
ZH_PLACES = [
    Slot("在公园里", "在户外"),
    Slot("在厨房里", "在室内"),
    Slot("在海边", "在水边"),
    Slot("在车站", "在公共场所"),
]


def zh_scored_pair(rng: random.Random) -> tuple[str, str, int]:
    """A Chinese pair with an integer similarity 0-5 (CNSD's scale)."""
    s, a, p = rng.choice(ZH_SUBJECTS), rng.choice(ZH_ACTIVITIES), rng.choice(ZH_PLACES)
    first = f"{s.text}{p.text}{a.text}。"
    changes = rng.randrange(4)
    if changes == 0:
        return first, f"{s.general}{p.text}{a.general}。", 5 - rng.randrange(2)
    if changes == 1:
        other = rng.choice([x for x in ZH_PLACES if x != p])
        return first, f"{s.text}{other.text}{a.text}。", 3
    if changes == 2:
        other = rng.choice([x for x in ZH_ACTIVITIES if x != a])
        return first, f"{s.text}{p.text}{other.text}。", 1 + rng.randrange(2)
    s2, a2, p2 = rng.choice(ZH_SUBJECTS), rng.choice(ZH_ACTIVITIES), rng.choice(ZH_PLACES)
    return first, f"{s2.text}{p2.text}{a2.text}。", 0


def write_cnsd(w: SampleWriter, rng: random.Random, sizes: dict[str, int]):
    for split, n in sizes.items():
        rows = []
        for i in range(n):
            a, b, score = zh_scored_pair(rng)
            rows.append(f"sample{split}-{i:04d}||{a}||{b}||{score}")
        w.add(f"cnsd_stsb/cnsd-sts-{split}.txt", rows)


def write_simclue(w: SampleWriter, rng: random.Random, sizes: dict[str, int]):
    files = {"test": "test_public.json", "train_1w": "train_pair_1w.json"}
    for split, n in sizes.items():
        lines = []
        for _ in range(n):
            a, b, score = zh_scored_pair(rng)
            lines.append(
                json.dumps({"sentence1": a, "sentence2": b, "label": "1" if score >= 4 else "0"}, ensure_ascii=False)
            )
        w.add(f"simclue/{files[split]}", lines)


def write_wiki1m(w: SampleWriter, rng: random.Random, n: int, prefix: int):
    lines = []
    for _ in range(n):
        subject, activity, place = scene(rng)
        lines.append(sentence(subject.text, activity.text, f"{place.text} {rng.choice(REASONS)}"))
    w.add("simcse_wiki1m/wiki1m_for_simcse.txt", lines)
    w.add("simcse_wiki1m/wiki1m_for_simcse.first_lines.txt", lines[:prefix])


def build() -> dict[str, str]:
    """Every sample file (path relative to the sample root -> content)."""
    w = SampleWriter()
    write_sts_year(w, random.Random(2012), 2012, ["MSRpar", "MSRvid", "SMTeuroparl", "OnWN", "SMTnews"], 8, 0)
    write_sts_year(w, random.Random(2013), 2013, ["FNWN", "headlines", "OnWN"], 10, 0)
    write_sts_year(
        w, random.Random(2014), 2014, ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"], 8, 0
    )
    write_sts_year(
        w, random.Random(2015), 2015, ["answers-forums", "answers-students", "belief", "headlines", "images"], 8, 3
    )
    write_sts_year(
        w,
        random.Random(2016),
        2016,
        ["answer-answer", "headlines", "plagiarism", "postediting", "question-question"],
        8,
        4,
    )
    write_stsbenchmark(w, random.Random(2017), {"train": 60, "dev": 24, "test": 36})
    write_sick(w, random.Random(2014_1), {"train": 60, "trial": 20, "test": 40})
    write_snli(w, random.Random(2015_1), train=(120, 4), dev=20, test=20)
    write_multinli(w, random.Random(2018), {"train": (40, 0), "dev_matched": (10, 2), "dev_mismatched": (10, 2)})
    write_mrpc(w, random.Random(2005), {"train": 60, "dev": 20, "test": 40})
    write_qqp(w, random.Random(2017_1), {"train": 60, "dev": 30})
    write_cnsd(w, random.Random(2019), {"train": 40, "dev": 20, "test": 30})
    write_simclue(w, random.Random(2021), {"test": 40, "train_1w": 40})
    write_wiki1m(w, random.Random(2021_1), 200, 100)
    return w.files
