"""The keep-or-drop decision: :func:`decide`, a pure function of the walk's record (blocks and named containers)
that says why each block goes, rule by rule (by name, outside the content root, links, notices, repeated template
lines, context, headings, the end of the article), and the thresholds and patterns those rules use.

Why a module of its own: this is where the extractor's precision is won or lost, tested rule by rule
(``tests/test_extract_content.py``); it reads blocks, never the tree, so it is kept apart from the walk. The rules
are told in :mod:`datapipe.extract.content`'s docstring. :func:`decide` is the reference: the extractor runs its
compiled twin (:mod:`datapipe.extract.verdicts`, the same rules over C arrays: 0.43 -> 0.2 ms a page), which a
change here must follow (``tests/test_extract_compiled.py`` holds the two to the same verdicts).
"""

from __future__ import annotations

import re
from collections import Counter

from datapipe.extract.blocks import HEADINGS, Block, Container, choose_root, is_inside, size_of
from datapipe.extract.names import (
    ARTICLE_KINDS,
    BOILERPLATE_ROLES,
    BOILERPLATE_TAGS,
    PAID_TIER,
    TEASER_TIER,
    class_and_id,
    classify_one,
    name_tokens,
    names_comments,
    trie_pattern,
)

# "all rights reserved" in the languages of the dev set, and the CJK forms of a copyright line (patterns)
RESERVED = (
    "all rights reserved",
    "alle rechte vorbehalten",
    "tous droits réservés",
    "todos los derechos reservados",
    "todos os direitos reservados",
    "tutti i diritti riservati",
    "wszelkie prawa zastrzeżone",
    "все права защищены",
    "všechna práva vyhrazena",
    "alle rechten voorbehouden",
    "版[权權](?:所有|[声聲]明|[说說]明|保[护護][:：])",
    "無断(?:転載|複製)",
    r"무단\s?(?:전재|복제|배포)",
)
_NOTICE = re.compile(r"©|\(c\) ?\d{4}|\bcopyright\b|" + "|".join(RESERVED), re.IGNORECASE)
# substrings of which one is in every notice (each of RESERVED holds one): the cheap test before the pattern
_NOTICE_MARKS = (
    "©", "(c)", "copyright", "rights reserved", "vorbehalten", "réservés", "reservados", "riservati",
    "zastrzeżone", "защищены", "vyhrazena", "voorbehouden", "版", "無断", "무단",
)  # fmt: skip
_NOTICE_MARK = re.compile(trie_pattern(sorted(_NOTICE_MARKS)))
KEEP_SHARE = 0.6  # a container named as boilerplate that holds this share of the page's text is not dropped
LINK_DENSITY = 0.35  # link text / text above which a block goes
# a paragraph this long is prose, whose writer linked many of its words, below this link share: menus and teaser
# lists are many short links, not one long run of text
PROSE_CHARS, PROSE_LINK_DENSITY = 200, 0.6
PAID_PROSE = 400  # a part named for a paywall with this much paragraph text holds the article behind it
SHORT_CHARS = 50  # a block shorter than this is judged by its neighbours
# a paragraph or heading under REPEATED_CHARS that the page has REPEATED times or more is its template's (a
# gallery's caption on every slide, "Video Ad Feedback" under every video), not the article's; a shorter one is a
# label a record repeats ("Goals", "Lineups" for every match of a results page), read with the text after it
REPEATED, REPEATED_MIN_CHARS, REPEATED_CHARS = 3, 15, 100
NOTICE_CHARS = 200  # a block this short with a copyright sign or "all rights reserved" is a notice
HEADING_REACH = 3  # how many blocks after a heading are searched for its text
LONG_HEADING = 100  # a heading this long is text set large, and stays without text after it
SHORT_NEEDS = 2  # how many of its two context blocks must be kept long ones for a short block to stay
GOOD, SHORT, BAD = range(3)
SHORT_EXEMPT = ("li", "tr", "pre")  # list items, table rows and code are short by nature
# Section titles that announce other pages of the site (boilerpipe's "terminating blocks"), by language: whole-
# block matches, case-blind. Only titles of lists are here: words that also open a box inside an article ("read
# also", "Lesen Sie auch", "Mehr zum Thema") or a real section ("Empfehlungen", "More about this recipe") are not.
TAIL_TITLES = {
    "en": r"related (?:articles?|posts?|stories|content|news|reading)|you (?:may|might) also (?:like|enjoy)|"
    r"more stories|most (?:read|popular|viewed|shared)(?: articles| stories| posts)?|"
    r"popular (?:posts|articles|stories)|recommended (?:for you|articles|stories)",
    "de": r"das könnte (?:sie|dich) auch interessieren|weitere (?:artikel|nachrichten|beiträge|meldungen|news)"
    r"(?: .{0,40})?|ähnliche (?:artikel|beiträge|themen|nachrichten)|meist ?gelesene?(?: artikel)?|"
    r"beliebte (?:artikel|beiträge)|verwandte (?:artikel|beiträge|themen)",
    "fr": r"sur le même (?:sujet|thème)|articles similaires|les plus lus|vous aimerez aussi",
    "es": r"(?:te|le) puede interesar|(?:noticias|artículos|notas) relacionad[ao]s|lo más (?:leído|visto)|"
    r"más noticias",
    "pl": r"najczęściej czytane|podobne artykuły",
    "it": r"articoli correlati|potrebbe interessarti|i più letti",
}
_TAIL_TITLE = re.compile(r"(?:" + "|".join(TAIL_TITLES.values()) + r")[\s:.!?…»>-]*", re.IGNORECASE)
TAIL_TITLE_CHARS = 60  # a block longer than this is text, not a section title
TAIL_SHARE = 0.5  # a section title ends the article only after this share of the kept text
BOX_RESUME = 600  # paragraph characters after a titled box of links that say the article goes on past it
BOX_PARAGRAPH = 100  # ... counted in paragraphs of this many characters or more
# a content root whose paragraphs are under FRAGMENT_SHARE of the page's paragraphs of FRAGMENT_PARAGRAPH characters
# or more, once the boilerplate by name is out, is a fragment of the article: no root is taken
FRAGMENT_SHARE, FRAGMENT_PARAGRAPH = 0.2, 150
# teaser cards after the article (:func:`_card_summaries`): this many headlines that are links, each followed by
# a summary shorter than CARD_SUMMARY; a headline is at most CARD_HEADLINE characters
CARD_RUN, CARD_SUMMARY, CARD_HEADLINE = 3, PROSE_CHARS, 150
# a picture's caption or credit set as a paragraph (:func:`_is_caption`): at most CAPTION_CHARS characters, opening
# with a figure's label or ending with a credit, in the languages of the dev set
CAPTION_CHARS = 250
CAPTION_WORDS = (
    "foto|fotos|photo|photos|bild|bilder|image|images|imagen|immagine|crédit|crédits|credit|credits|quelle|source|"
    "fuente|fonte|zdjęcie|zdjęcia|fot|illustration|grafik|grafika|titelbild|beitragsbild|aufmacherbild|"
    "photograph|picture|pictured"
)
_CAPTION_START = re.compile(
    r"(?:foto|photo|bild|image|imagen|immagine|zdjęcie|fot|credits?|"
    r"crédits?|illustration|titelbild|beitragsbild|aufmacherbild)\.?\s*\d*\s*:",
    re.IGNORECASE,
)
_CAPTION_END = re.compile(
    r"(?:(?:^|[\s.,;|(/])(?:" + CAPTION_WORDS + r")\s*[:©]\s*[^\s.!?][^.!?:]{0,60}|"
    r"/\s*(?:domena publiczna|getty images?|shutterstock|istock(?:photo)?|dpa|afp|reuters|ap|imago|"
    r"picture[- ]alliance|unsplash|pixabay|public domain)"
    r")[.)\]]?\s*$",
    re.IGNORECASE,
)
# an appeal to the reader set as a paragraph, at most APPEAL_CHARS characters: the site asks for support, a
# subscription or a sign-up in the first person plural, or to get its app (the dev set's languages)
APPEAL_CHARS = 400
# (one phrase per alternative, each opening with a letter: the compiled verdicts group them by it)
_US_OR_OURS = r"(?:us|our (?:work|journalism|newsletter|community|channel))\b"
_BECOMING = r"(?:supporting|subscribing|donating|becoming a (?:member|subscriber|supporter))"
APPEAL_PHRASES = (
    *(f"{w} {_US_OR_OURS}" for w in ("support", "subscribe to", "join", "follow")),
    *(f"{w} {_BECOMING}" for w in ("consider", "please")),
    r"become a (?:member|subscriber|supporter|patron)\b", r"subscribe now\b", r"sign up (?:here|now|for our)\b",
    r"download (?:the|our) .{0,40}\bapps?\b",
    "apóyanos", "únete a nuestr[oa]", "suscríbete", "hazte (?:socio|miembro|suscriptor)",
    "unterstützen sie uns", "unterstütze uns", "abonnieren sie", "werden sie (?:mitglied|abonnent)",
    "soutenez[- ]nous", "abonnez[- ]vous", "faites un don",
    "sostienici", "abbonati", "iscriviti alla", "wesprzyj nas", "zapisz się",
    "steun ons", "word lid",
    *(f"{w} .{{0,40}}canal de telegram" for w in ("ya", "tenemos")),
    *(rf"{w} \w*newsletter\w*" for w in ("our", r"unser\w*", "notre", "nos", "nuestr[oa]s?", "i nostri", r"nasz\w*")),
    "s[ií]guenos en", "follow us on", "folgen sie uns", "folge uns", "suivez[- ]nous", "seguici su", "obserwuj nas",
    "jede (?:kleine )?spende", "every (?:donation|contribution)", "cada donaci[oó]n", "chaque don",
    "zapraszamy (?:też |również )?do (?:subskrypcji|prenumeraty)",
)  # fmt: skip
APPEALS = "|".join(APPEAL_PHRASES)
_AD_LABEL = re.compile(
    r"(?:advertisement|advertising|anzeige|werbung|publicidad|publicité|pubblicità|reklama|reclame|sponsored|"
    r"gesponsert)\s*[:.]?",
    re.IGNORECASE,
)
# words of which one is in every appeal (each alternative of APPEALS holds one, as a word of its own): the cheap
# test before the case-blind pattern, which alone took 1.9 ms a page, more than all the other decisions. The
# block's words are compared as written (``str.split``: a pattern or ``str.translate`` cost twice as much),
# lowercase, capitalized or in capitals, with a sign of punctuation before or after
APPEAL_WORDS = (
    "support", "subscribe", "supporting", "subscribing", "donating", "become", "sign", "signing", "download",
    "join", "follow", "apóyanos", "únete", "suscríbete", "hazte", "unterstützen", "unterstütze", "abonnieren",
    "mitglied", "abonnent", "soutenez", "abonnez", "faites", "sostienici", "abbonati", "iscriviti", "wesprzyj",
    "zapisz", "steun", "lid", "telegram", "newsletter", "síguenos", "siguenos", "folgen", "folge", "suivez",
    "seguici", "obserwuj", "spende", "donation", "contribution", "donación", "donacion", "chaque", "zapraszamy",
)  # fmt: skip
_APPEAL_KEYS = frozenset(
    before + k + after
    for w in APPEAL_WORDS
    for k in (w, w.capitalize(), w.upper())
    for before in ("", "¡", "(")
    for after in ("", ".", "!", ",", ":", "?", ")", "…")
)
AD_LABEL_CHARS = 20  # an advertisement's label alone on a line is at most this long
_APPEAL = re.compile(r"(?:" + APPEALS + r")\b", re.IGNORECASE)
# a body named as the article's with this many list items, whose text without its link-heavy blocks is shorter
# than this, is a list of links (a link roundup): its list items are its text (:func:`_link_list_bodies`)
LINK_LIST_ITEMS, LINK_LIST_PROSE = 5, 250


def _is_notice(text: str) -> bool:
    """A copyright sign or words in the text; the regular expression only where a search for the marks (as a
    prefix tree, in the lowercased text) found a candidate (a case-blind search that finds nothing took a quarter
    of the decisions' time; testing the marks one by one, a third of what is left)."""
    return bool(_NOTICE_MARK.search(text.lower())) and bool(_NOTICE.search(text))


def _paid_body(c: Container, prose: int) -> bool:
    """Whether a part named for a paywall holds the article's text behind it, not the box that asks for a
    subscription: :data:`PAID_PROSE` characters of paragraphs or more, little of its text links. (A paragraph
    named so is always text: Condé Nast's sites name every paragraph after the first ``paywall``.)"""
    return prose >= PAID_PROSE and c.link_chars <= LINK_DENSITY * c.chars


def _holds_most(c: Container, prose: int, outer_chars: int, outer_prose: int) -> bool:
    """Whether a part named as boilerplate holds most of an outer part's text (``prose``: its paragraphs'
    characters), so that it wraps the article and is not dropped. A part that says by its tag or ARIA role what it
    is (an ``<aside>``, ``role=complementary``) must hold most of the paragraphs too: a live ticker or a list of
    headlines beside a short article has more text than the article, in list items and links."""
    if c.chars < KEEP_SHARE * outer_chars:
        return False
    stated = c.tag in BOILERPLATE_TAGS or bool(
        c.attrs and (c.attrs.get("role") in BOILERPLATE_ROLES or names_comments(c.attrs))
    )
    return not stated or prose >= KEEP_SHARE * outer_prose


def links_away(blocks: list[Block]) -> bool:
    """Whether a heading among the blocks is a link: a teaser's headline leads to its article, an article's
    own subheadings lead nowhere."""
    return any(b.kind in HEADINGS and b.link_chars > b.chars // 2 for b in blocks)


def decide(blocks: list[Block], containers: list[Container]) -> list[str]:
    """Why each block goes ("" for a block kept): a pure function of the walk's record (the rules are told in
    :mod:`datapipe.extract.content`). The first rule that drops a block names it: ``name:<the container>``,
    ``teaser:<the container>``, ``outside-root``, ``links``, ``notice``, ``card``, ``caption``, ``appeal``, ``short``, ``heading``, ``tail``."""
    n = len(blocks)
    total = sum(b.chars for b in blocks)
    why = [""] * n
    upto = [0] * (n + 1)  # upto[i]: characters in the blocks before block i
    links = [0] * (n + 1)  # links[i]: of them, those in links
    prose = [0] * (n + 1)  # prose[i]: of them, those in paragraphs
    for i, b in enumerate(blocks):
        upto[i + 1] = upto[i] + b.chars
        links[i + 1] = links[i] + b.link_chars
        prose[i + 1] = prose[i] + (b.chars if b.kind == "p" else 0)
    for c in containers:
        if not c.skipped:
            c.chars = upto[c.end] - upto[c.start]
            c.link_chars = links[c.end] - links[c.start]
            if c.kind == "boiler" and c.tag == "article" and not _names_kind(c.attrs):
                c.kind, c.tier = "root", 2  # named for its author or a state of it: an article
    roots, cores = choose_root(containers, total)
    # 2. boilerplate by name, and teasers that link away (not a container around a root or the candidate it
    # grew from, or holding most of the text)
    for c in containers:
        if c.start == c.end or "" not in why[c.start : c.end]:
            continue  # no blocks, or inside a part already dropped: nothing left to label
        if c.kind == "boiler":
            label = "name:"
        elif c.tier == TEASER_TIER and links_away(blocks[c.start : c.end]):
            label = "teaser:"
        elif c.tier == PAID_TIER and c.tag != "p" and not _paid_body(c, prose[c.end] - prose[c.start]):
            label = "paywall:"
        else:
            continue
        mine = prose[c.end] - prose[c.start]
        if (
            _holds_most(c, mine, total, prose[n])
            or any(
                is_inside(r, c)
                or (is_inside(c, r) and _holds_most(c, mine, r.chars, prose[r.end] - prose[r.start]))
                for r in roots
            )
            or any(is_inside(r, c) for r in cores)
        ):
            continue  # a wrapper named for a state (``<div class="entry share">``) around the article
        label += c.name
        for i in range(c.start, c.end):
            why[i] = why[i] or label
    # 3. the content roots, and the title and lead: from the last <h1> before the first root to it
    if roots:
        inside = [False] * n
        for r in roots:
            inside[r.start : r.end] = [True] * (r.end - r.start)
        # a root that holds little of the page's paragraphs left after the boilerplate is a fragment (the lead
        # named ``post-text`` above an unnamed body): no root then
        mine = sum(
            b.chars for b, w, k in zip(blocks, why, inside, strict=True) if k and not w and b.kind == "p"
        )
        left = sum(
            b.chars
            for b, w in zip(blocks, why, strict=True)
            if not w and b.kind == "p" and b.chars >= FRAGMENT_PARAGRAPH
        )
        if mine < FRAGMENT_SHARE * left:
            roots = []
    if roots:
        first = min(r.start for r in roots)
        title = max((i for i in range(first) if blocks[i].kind == "h1"), default=first)
        inside[title:first] = [True] * (first - title)
        for i in range(n):
            if not inside[i] and not why[i]:
                why[i] = "outside-root"
    # 4. link-heavy blocks, and copyright notices; and a line the page's template repeats. In a body named as
    # such that is a list of links (a link roundup, a bookmarks post), the links are its text
    listed = _link_list_bodies(blocks, why, cores)
    seen = Counter(
        b.text
        for b in blocks
        if REPEATED_MIN_CHARS <= b.chars < REPEATED_CHARS and (b.kind == "p" or b.kind in HEADINGS)
    )
    for i, b in enumerate(blocks):
        if why[i]:
            continue
        if (
            REPEATED_MIN_CHARS <= b.chars < REPEATED_CHARS
            and (b.kind == "p" or b.kind in HEADINGS)
            and seen[b.text] >= REPEATED
        ):
            why[i] = "repeated"
            continue
        long_prose = b.kind == "p" and b.chars >= PROSE_CHARS
        if b.link_chars > (PROSE_LINK_DENSITY if long_prose else LINK_DENSITY) * b.chars:
            if not (listed[i] and b.kind == "li"):
                why[i] = "links"
            continue
        if b.chars < NOTICE_CHARS and _is_notice(b.text):
            why[i] = "notice"
        elif b.chars <= APPEAL_CHARS and (b.kind == "p" or b.kind in HEADINGS):
            # the site's appeal to the reader (support us, subscribe, our newsletter, get our app); a picture's
            # caption or credit set as a paragraph ("... Foto: Andina"); an advertisement's label
            text = b.text
            if not _APPEAL_KEYS.isdisjoint(text.split()) and _APPEAL.search(text):
                why[i] = "appeal"
            elif b.kind == "p" and b.chars <= CAPTION_CHARS and _is_caption(text):
                why[i] = "caption"
            elif b.chars <= AD_LABEL_CHARS and _AD_LABEL.fullmatch(text):
                why[i] = "appeal"
    # 4b. teaser cards after the article: a run of links each followed by a short summary, with no long
    # paragraph kept after it
    for i in _card_summaries(blocks, why):
        why[i] = "card"
    # 5. a short block stays only between kept long ones: the nearest block on each side that is not itself
    # short (jusText's context rule)
    state = [
        BAD
        if w
        else GOOD
        if (b.chars >= SHORT_CHARS or size_of(b.text) >= SHORT_CHARS) and b.kind[0] != "h"
        else SHORT
        for b, w in zip(blocks, why, strict=True)
    ]
    if GOOD not in state:  # a page of short blocks only (verse, a list, a table): they are its text
        state = [BAD if w else GOOD for w in why]
    before = [BAD] * n
    last = BAD
    for i in range(n):
        before[i] = last
        if state[i] != SHORT:
            last = state[i]
    last = BAD
    for i in range(n - 1, -1, -1):
        kind = blocks[i].kind
        short = state[i] == SHORT and kind[0] != "h" and kind not in SHORT_EXEMPT
        if short and (before[i] == GOOD) + (last == GOOD) < SHORT_NEEDS:
            why[i] = "short"
        if state[i] != SHORT:
            last = state[i]
    # then a heading stays only when kept text (or a kept subheading) follows it within a few blocks, before
    # the next heading of its level
    for i in range(n - 1, -1, -1):
        b = blocks[i]
        if why[i] or b.kind not in HEADINGS or b.chars >= LONG_HEADING:
            continue
        level = HEADINGS[b.kind]
        for j in range(i + 1, min(n, i + 1 + HEADING_REACH)):
            nxt = blocks[j].kind
            if nxt in HEADINGS and HEADINGS[nxt] <= level:
                break
            if not why[j]:
                break
        else:
            j = n
        if j >= n or why[j] or (blocks[j].kind in HEADINGS and HEADINGS[blocks[j].kind] <= level):
            why[i] = "heading"
    # 6. the end of the article: a section title that announces other pages of the site, in the last part of
    # the kept text, ends it (the list it titles follows); one that the article's prose follows again titles a
    # box inside the article, which goes alone
    kept = 0
    tail = TAIL_SHARE * sum(b.chars for b, w in zip(blocks, why, strict=True) if not w)
    i = 0
    while i < n:
        b = blocks[i]
        if not why[i] and b.chars <= TAIL_TITLE_CHARS and _TAIL_TITLE.fullmatch(b.text):
            resume = _prose_after(blocks, why, i)
            if resume < n:
                for j in range(i, resume):
                    why[j] = why[j] or "box"
                i = resume
                continue
            if kept >= tail:
                for j in range(i, n):
                    why[j] = why[j] or "tail"
                break
        if not why[i]:
            kept += b.chars
        i += 1
    return why


def _link_list_bodies(blocks: list[Block], why: list[str], cores: list[Container]) -> list[bool]:
    """Which blocks are in a body named as the article's (a first-tier root: ``entry-content``) that is a list of
    links: it holds :data:`LINK_LIST_ITEMS` list items or more, most of its text links, and without its
    link-heavy blocks it would keep under :data:`LINK_LIST_PROSE` characters. A link roundup ("Presseförderung:
    Studie zweifelt an Stütze vom Staat / via netzpolitik.org", one item per link) is such a post; an article
    with a list of related links in its body keeps its own paragraphs and the list goes as before."""
    out = [False] * len(blocks)
    for r in cores:
        if r.tier != 1 or r.link_chars * 2 <= r.chars:
            continue
        mine = range(r.start, r.end)
        items = sum(blocks[i].kind == "li" and not why[i] for i in mine)
        plain = sum(
            blocks[i].chars
            for i in mine
            if not why[i] and blocks[i].link_chars <= LINK_DENSITY * blocks[i].chars
        )
        if items >= LINK_LIST_ITEMS and plain < LINK_LIST_PROSE:
            out[r.start : r.end] = [True] * (r.end - r.start)
    return out


def _is_link_line(b: Block, w: str) -> bool:
    """A card's headline: a heading or short line that is all or mostly a link, dropped as links."""
    return w == "links" and b.chars <= CARD_HEADLINE and (b.kind in HEADINGS or b.kind == "p")


def _card_summaries(blocks: list[Block], why: list[str]) -> list[int]:
    """The summaries of teaser cards after the article (MIT Technology Review's "Deep Dive", CNN's sidebar of
    stories): :data:`CARD_RUN` or more headlines that are links (already dropped as links), each followed by
    one kept paragraph under :data:`CARD_SUMMARY` characters, with no paragraph of :data:`PROSE_CHARS` or more
    kept after the run. The headline went as a link and its summary stayed, between kept lines."""
    n = len(blocks)
    i = n - 1  # the cards come after the last long paragraph kept
    while i >= 0 and (why[i] or blocks[i].kind != "p" or blocks[i].chars < PROSE_CHARS):
        i -= 1
    out: list[int] = []
    run: list[int] = []
    i += 1
    while i < n:
        if _is_link_line(blocks[i], why[i]):
            j = i + 1
            if j < n and not why[j] and blocks[j].kind == "p" and blocks[j].chars < CARD_SUMMARY:
                run.append(j)
                i = j + 1
                continue
        elif why[i] and run:  # dropped blocks between cards (a picture's credit, a date) break no run
            i += 1
            continue
        if len(run) >= CARD_RUN:
            out += run
        run = []
        i += 1
    if len(run) >= CARD_RUN:
        out += run
    return out


def _is_caption(text: str) -> bool:
    """Whether a short paragraph is a picture's caption or credit: it opens with a picture's label
    (``Titelbild:``, ``Photo:``; not a numbered figure's, ``Figure 1:``, which tells what a diagram shows) or ends
    with a credit (``Foto: Andina``, ``(Credit: X / Grist)``,
    ``/domena publiczna``, ``/ Getty Images``)."""
    if ":" in text:
        return bool(_CAPTION_START.match(text) or _CAPTION_END.search(text))
    return ("/" in text or "©" in text) and bool(_CAPTION_END.search(text))


def _prose_after(blocks: list[Block], why: list[str], i: int) -> int:
    """Where the article goes on after a box titled at block ``i`` (``len(blocks)`` when it does not): the first
    kept paragraph (:data:`BOX_PARAGRAPH` characters or more, little of it links) after a box of links or list items,
    with at least :data:`BOX_RESUME` characters of such paragraphs from there on. A title followed by a teaser's
    summary, or by the page's last paragraphs, ends the article as before."""
    n = len(blocks)
    for j in range(i + 1, n):
        b = blocks[j]
        if (
            not why[j]
            and b.kind == "p"
            and b.chars >= BOX_PARAGRAPH
            and b.link_chars <= LINK_DENSITY * b.chars
        ):
            box = range(i + 1, j)
            listed = sum(why[k] == "links" or blocks[k].kind == "li" for k in box)
            if not box or 2 * listed < len(box):
                return n
            more = sum(
                c.chars
                for c, w in zip(blocks[j:], why[j:], strict=True)
                if not w and c.kind == "p" and c.chars >= BOX_PARAGRAPH
            )
            return j if more >= BOX_RESUME else n
    return n


def _names_kind(attrs: dict[str, str | None] | None) -> bool:
    """Whether an <article> named as boilerplate is named for what it is (:data:`ARTICLE_KINDS`: a comment, a
    card; or its ARIA role says so), not for its author or a state of it."""
    if not attrs or attrs.get("role") in BOILERPLATE_ROLES:
        return True
    names = class_and_id(attrs)
    return any(
        classify_one(name) < 0 and not ARTICLE_KINDS.isdisjoint(name_tokens(name.split("--", 1)[0]))
        for name in names.split()
    )
