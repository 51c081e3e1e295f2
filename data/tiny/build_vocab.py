"""Build ``vocab.txt``, the WordPiece vocabulary of sentcl's tiny test encoder.

Run ``python data/tiny/build_vocab.py`` to regenerate it; the output depends only on this
file (``tests/test_models.py`` checks that the shipped ``vocab.txt`` matches it). The
vocabulary is the project's own: BERT's five special tokens, every printable ASCII
character (alone and as a ``##`` word continuation), common English suffixes, a list of
common English words written here, and every CJK Unified Ideograph (U+4E00–U+9FFF) as a
one-character token, as BERT's tokenizer splits Chinese text into characters. So English
text tokenizes into words, anything else ASCII into characters, and Chinese sentences
(CNSD, SimCLUE) are not all ``[UNK]``.
"""

from __future__ import annotations

import string
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

SUFFIXES = """
s es ed d ing ly er ers est ion ions tion tions ation ment ments ness able ible al ial ful less
ous ive ity y ies ism ist ists ize ized ic ical ance ence ant ent
"""

WORDS = """
a an the this that these those some any all each every no none both either neither other another
such what which who whom whose where when why how whether if then than because so but and or nor
not yet also only just even still already again ever never always often sometimes usually rarely
very too quite rather really almost enough more most less least much many few several lot lots
i me my mine myself you your yours yourself he him his himself she her hers herself it its itself
we us our ours ourselves they them their theirs themselves one ones someone something somewhere
anyone anything everyone everything everybody nobody nothing nowhere here there
be am is are was were been being have has had having do does did done doing will would shall
should can could may might must ought need needs needed
in on at by for with without within from to into onto of off out over under above below up down
about around through across along against among between behind beside besides beyond during
near inside outside toward towards upon after before since until till while via per like unlike
zero one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
hundred thousand million billion first second third fourth fifth last next half double single
man men woman women person people child children kid kids boy boys girl girls baby babies adult
adults player players team teams family friend friends mother father parent parents son daughter
brother sister husband wife student students teacher teachers doctor doctors nurse patient
patients worker workers officer police soldier soldiers crowd group couple guy lady gentleman
dog dogs cat cats horse horses bird birds fish cow cows sheep animal animals bike bicycle car cars
bus truck train plane boat ship road street city town country world house home room kitchen
building school hospital office store shop market restaurant park beach field water ocean sea
river lake mountain mountains snow rain sun sky tree trees grass flower flowers food table chair
bed door window wall floor ball guitar piano music song songs book books paper phone computer
picture photo camera video game games sport sports soccer football basketball tennis baseball
hat shirt dress jacket shoes glasses bag hand hands head face eyes hair arm arms leg legs body
air fire light night day days morning evening week weeks month months year years time times
today tomorrow yesterday hour hours minute minutes moment age life death war peace money price
cost market government state states president minister leader party election vote law court
company business job work market economy bank stock stocks oil gas energy power health disease
virus covid coronavirus pandemic vaccine vaccines mask masks symptom symptoms test tests testing
case cases risk spread infection infected hospitalized treatment medicine drug drugs care
question questions answer answers problem problems issue issues reason reasons way ways fact
facts claim claims news report reports story stories information data result results number
numbers part parts side sides end start point points level place places area areas kind sort
type thing things word words name names language english chinese sentence sentences text texts
meaning similar different same new old young big small large little long short high low good bad
great best better worse worst right wrong true false real main full free open closed hot cold warm
happy sad angry tired busy ready sure clear easy hard difficult simple important possible black
white red blue green yellow brown gray orange pink purple dark bright wet dry clean dirty empty
early late fast slow quick loud quiet rich poor strong weak safe dangerous public private local
national international social political economic human natural online several certain likely
play plays played playing run runs ran running walk walks walked walking sit sits sat sitting
stand stands stood standing ride rides rode riding eat eats ate eating drink drinks drinking cook
cooking swim swimming jump jumping dance dancing sing singing read reads reading write writes
writing wrote talk talks talking speak speaking say says said tell tells told ask asks asked
asking look looks looked looking see sees saw seen watch watching go goes went gone going come
comes came coming get gets got getting make makes made making take takes took taken taking give
gives gave given giving find finds found think thinks thought know knows knew known want wants
wanted use uses used using try tries tried help helps helped show shows showed shown call called
keep kept let put puts set sets turn turned leave left move moved moving live lives lived living
believe believes hold holding bring brought begin began stop stopped open opened close closed
carry carrying throw throwing catch catching climb climbing fly flying drive driving wear wearing
sleep sleeping wait waiting work works worked working buy bought sell sold pay paid build built
cut cutting hit kill killed die died dies win won lose lost fall fell rise rose grow growing
change changed changes increase increased decrease reduce reduced report reported announce
announced according expected include includes including remain remained become became happen
happened cause causes caused prevent protect spread spreading share shared post posted check
checked verify verified deny denied confirm confirmed agree agreed support supported oppose
yes no ok please thanks thank sorry hello mr mrs ms dr us uk eu un
"""


def build_vocab() -> list[str]:
    """The tiny encoder's vocabulary, in id order (deterministic)."""
    tokens: list[str] = list(SPECIAL_TOKENS)
    singles = string.ascii_lowercase + string.digits + string.punctuation
    tokens += list(singles)
    tokens += ["##" + c for c in singles]
    tokens += ["##" + s for s in SUFFIXES.split()]
    tokens += WORDS.split()
    tokens += [chr(cp) for cp in range(0x4E00, 0x9FFF + 1)]
    seen: set[str] = set()
    vocab = []
    for tok in tokens:
        if tok not in seen:
            seen.add(tok)
            vocab.append(tok)
    return vocab


def main() -> None:
    out = Path(__file__).with_name("vocab.txt")
    out.write_text("\n".join(build_vocab()) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
