"""An AlarmDescription holds at most 1,024 characters (PutMetricAlarm refuses a longer one), counted in UTF-16 units (an
emoji counts 2: alarm_text.length). Every description gpudash
writes keeps the alarm's own sentence, its runbook and who made it whole; its notes (what CloudWatch's form of the
rule does otherwise) give way from the last, first to their short form, then whole notes left out, and a mark at the
end counts them and names docs/alarm-notes.md, which explains every note. Nothing is cut inside a word.

Every description of hostile builds is checked against the notes it was given (render.alarms calls
alarm_text.described; the test records each call): user alarms with a long description and runbook on fields and
groupings that carry many notes, on both pipelines, on the Container Insights add-on, in per-pod mode static, with
GPUs that may be split into MIG instances."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from generator.artifacts import build
from generator.cloudwatch_query import GAP_SHORT, GAP_TEXTS, gap_said
from generator.errors import InputError
from generator.model import Alarm, Condition, Query
from generator.render import alarm_text, alarms as alarm_render
from generator.render.alarm_text import DESCRIPTION_LIMIT, ELIDED, NOTES_DOC, Note, described
from tests.support.projects import bundled_project, defined_project

# a user's own sentence and runbook, long but within reason: 409 and 243 characters
LONG = ("This alarm watches the training fleet of the research group, whose jobs run for days on shared nodes and "
        "whose checkpoints are written every hour; when it fires, the job is likely stuck in a collective operation "
        "or waiting on storage, and every hour it stays so costs the group a node-hour per GPU held, so the on-call "
        "looks at it within the hour and pages the job's owner if it is not moving.")
RUNBOOK = ("https://wiki.example.com/runbooks/gpu/training-fleet#stuck-jobs: check the job's logs (kubectl logs), its "
           "NCCL debug output, the node's dmesg and nvidia-smi -q; if a GPU is at fault, cordon the node and "
           "reschedule the job.")
CASES = [  # (rule, field, aggregation, grouping, comparison, threshold, extra Alarm arguments)
    ("pod-fb-sum", "DCGM_FI_DEV_FB_USED", "sum", ("pod",), ">", 70000, ""),
    ("pod-util-avg", "DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",), "<", 5, ", evaluation_periods=3"),
    ("ns-power-sum", "DCGM_FI_DEV_POWER_USAGE", "sum", ("namespace",), ">", 5000, ""),
    ("fleet-temp-avg", "DCGM_FI_DEV_GPU_TEMP", "avg", (), ">", 85, ", missing_data='breaching'"),
    ("gpu-count-low", "DCGM_FI_DEV_GPU_TEMP", "count", (), "<", 8, ""),
    ("pod-gpu-util", "DCGM_FI_DEV_GPU_UTIL", "avg", ("pod", "gpu"), "<", 5, ", evaluation_periods=3"),
    ("gpu-replays", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu"), ">", 10,
     ", missing_data='notBreaching'"),
]
AS_INCREASE = {"gpu-replays"}


def _alarms(left_out: frozenset = frozenset()) -> str:
    return "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'Training fleet: ' + {rule!r}, Condition(Query({field!r}, {how!r}, {by!r}"
        f"{', as_increase=True' if rule in AS_INCREASE else ''}), {comparison!r}, {threshold!r}), "
        f"description={LONG!r}, runbook={RUNBOOK!r}{extra})\n"
        for rule, field, how, by, comparison, threshold, extra in CASES if rule not in left_out) + (
        f"    yield Alarm('data-missing', 'Training fleet: no GPU data', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count'), "
        f"'<', 1), severity='critical', absent=True, missing_data='breaching', evaluation_periods=2, "
        f"description={LONG!r}, runbook={RUNBOOK!r})\n")


ALARMS = _alarms()
# a pod's total per scrape (the OTel pipeline's pod_total set) has no value a static alarm can name
STATIC_LEFT_OUT = {"static": frozenset({"pod-fb-sum"})}
SETTINGS = {
    "otel": "",
    "classic": "agent:\n  pipeline: classic\n",
    "classic-virtual": "agent:\n  pipeline: classic\nexporter:\n  virtual_gpus: true\n",
    "otel-virtual": "exporter:\n  virtual_gpus: true\n",
    "addon": "cloudwatch:\n  source: container-insights\n",
    "static": "alarms:\n  per_pod: static\n  static_pods: [research/train-0]\n",
    "classic-static": "agent:\n  pipeline: classic\nalarms:\n  per_pod: static\n  static_pods: [research/train-0]\n",
}
MARK = re.compile(r" \[(?:(\d+) notes? shortened)?(?:, )?(?:(\d+) notes? left out)?: " + re.escape(NOTES_DOC)
                  + r"\]$")


def _recorded(monkeypatch, settings: str, tmp_path, alarms: str = ALARMS) -> list[tuple]:
    """Each description the build writes, with the alarm, notes, own sentence and title it was written from."""
    calls = []
    original = alarm_render.described

    def recording(alarm, notes=(), own=None, title=None):
        notes = list(notes)
        text = original(alarm, notes, own, title)
        calls.append((alarm, [n for n in notes if n.text], own, title, text))
        return text
    monkeypatch.setattr(alarm_render, "described", recording)
    made = build(defined_project(tmp_path, settings, alarms=alarms), grafana=False).alarms  # no dashboard read
    monkeypatch.undo()
    written = {a.request["AlarmDescription"] for a in made}
    return [call for call in calls if call[-1] in written]  # (the _about's whole try, when cut, is not written)


def _checked(alarm, notes, own, title, text) -> tuple[int, int]:
    """Assert the layout of one description; (notes shortened, notes left out)."""
    assert alarm_text.length(text) <= DESCRIPTION_LIMIT, (alarm.id, alarm_text.length(text))
    head = f"{title or alarm.title}. {alarm.description if own is None else own}"
    assert text.startswith(head + " Runbook: " + alarm.runbook + " Managed by gpudash ("), (alarm.id, text[:200])
    assert ELIDED not in text, text
    shortened = sum(1 for n in notes if n.text not in text and n.short and n.short in text)
    left = sum(1 for n in notes if n.text not in text and not (n.short and n.short in text))
    mark = MARK.search(text)
    if shortened or left:
        assert mark, text[-200:]
        assert (int(mark.group(1) or 0), int(mark.group(2) or 0)) == (shortened, left), (text[-300:], shortened,
                                                                                          left)
    else:
        assert not mark and NOTES_DOC not in text
    return shortened, left


# What a note's whole text says that its short form must say too (terse, never silent on the consequence): a pattern
# of the whole text, and what the short form holds where it matches (from the match)
FACTS = [
    (r"lint ((?:AL|CW)\d+)", lambda m: m.group(1)),  # the lint rule that lists the alarm
    (r"clears (\d+ (?:minutes|s)) after the last reading", lambda m: f"clears {m.group(1)} after the last reading"),
    (r"DCGM's blank", lambda m: "DCGM"),
    (r"blank at (\d+) of (\d+): ([\d.]+) of it",
     lambda m: f"{m.group(1)} of {m.group(2)} scrapes reads {m.group(3)}, the rule's 1"),
    (r"read (\d+(?:\.\d+)? W)", lambda m: m.group(1)),  # the worked figure
    (r"counts, adds and weighs", lambda m: m.group(0)),
    (r"so it can (fire|miss)", lambda m: f"can {m.group(1)}"),
    (r"off by up to one gap", lambda m: m.group(0)),
    (r"does not alarm for the others", lambda m: "not each GPU"),
    (r"count fewer", lambda m: "fewer"),
    (r"with none in it the alarm is in ALARM", lambda m: "the alarm is in ALARM"),
    (r"with its GPU's increase", lambda m: "the GPU's increase"),
    (r"this alarm (never fires|fires) for it", lambda m: f"it {m.group(1)} for its GPU"),
    (r"GPUs split into MIG instances are not evaluated", lambda m: "MIG GPUs are not evaluated"),
    (r"DaemonSet ([\w.-]+/[\w.-]+)", lambda m: m.group(1)),
    (r"others are not seen", lambda m: "does not fire for others"),
    (r"crash loop", lambda m: "crash loop"),
    (r"silent with its pod available", lambda m: m.group(0)),
    # the data-missing alarms' further sentences (data_missing.About)
    (r"`kubectl[^`]*`", lambda m: m.group(0)),  # where to look
    (r"the cluster's alarm", lambda m: m.group(0)),  # which alarm sees it instead
    (r"is notBreaching", lambda m: "does not fire"),
    (r"(?:is|are) not(?: missing data)?[;.]", lambda m: "not"),
    (r"clears late", lambda m: m.group(0)),
    (r"below 1/\(2k\)", lambda m: m.group(0)),
    (r"short one period", lambda m: "one period short"),
    (r"exact while fewer than (\d+)", lambda m: f"xact while fewer than {m.group(1)}"),
    (r"(rolling restart|exporter rollout|agent restart)", lambda m: m.group(1)),
    (r"over (\d+) minutes after joining can be", lambda m: f"over {m.group(1)} minutes after joining it can"),
    (r"over (\d+) is\.", lambda m: f"over {m.group(1)} it does"),
    (r"(node metrics every \d+ s and DCGM every \d+ s)", lambda m: m.group(1)),
    (r"a pod not available", lambda m: m.group(0)),
]


def _facts_dropped(note: Note) -> list[str]:
    """What `note`'s short form leaves unsaid of FACTS its whole text says."""
    return [fact(match) for pattern, fact in FACTS for match in re.finditer(pattern, note.text)
            if fact(match) not in note.short]


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_description_keeps_its_sentence_and_runbook_and_counts_the_notes_it_cut(name, monkeypatch, tmp_path):
    recorded = _recorded(monkeypatch, SETTINGS[name], tmp_path, _alarms(STATIC_LEFT_OUT.get(name, frozenset())))
    assert recorded
    gave_way = [call[0].id for call in recorded if any(_checked(*call))]
    shortened = [note for call in recorded for note in call[1] if note.short and note.text not in call[-1]
                 and note.short in call[-1]]
    assert shortened and [(n.short, _facts_dropped(n)) for n in shortened if _facts_dropped(n)] == []
    # what its threshold reads (the unused share, flags past a level) is kept, whole or short
    threshold_cut = [(call[0].id, note.text) for call in recorded for note in call[1]
                     if re.match(r"it reads [\d.]+ less each reading above|readings .* read 1, others 0", note.text)
                     and note.text not in call[-1] and not (note.short and note.short in call[-1])]
    assert threshold_cut == [], threshold_cut
    many = [call for call in recorded if len(call[1]) >= 3]
    assert many, [(c[0].id, len(c[1])) for c in recorded]  # hostile: alarms with several notes each
    assert gave_way  # at this length some notes give way, and are counted


def test_a_user_alarm_with_every_note_keeps_its_runbook_and_the_mig_note_first():
    """`described` alone: every kind of note a description carries, each whole one past the room: the MIG note
    (first) stays, the last give way to their short forms, then whole notes are left out, counted. (The user's
    sentence a little shorter than LONG: room for two short forms after the MIG note.)"""
    sentence = LONG.replace(" and whose checkpoints are written every hour", "")
    alarm = Alarm("user-rule", "Training fleet stuck", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)), "<",
                                                                 5), description=sentence, runbook=RUNBOOK,
                  defined_at="alarms/user.py:3")
    notes = [Note(alarm_render.MIG_UNSEEN),
             Note(GAP_TEXTS["level"], GAP_SHORT["level"]),
             *(Note(text, alarm_render.SHORT[text]) for text in (
                 alarm_render.COPIES_COUNTED, alarm_render.NAMED_SHARE, alarm_render.ALARM_MIG_ONE_INSTANCE)),
             Note("x" * 300),  # a note with no short form: only left out
             alarm_render.stale(alarm, bundled_project().catalog, bundled_project().settings),
             Note("A note of a whole sentence, such as the clusters a fleet alarm judges, in its long form.",
                  "A whole sentence, short.", sentence=True)]
    text = described(alarm, notes)
    shortened, left = _checked(alarm, notes, None, None, text)
    assert alarm_render.MIG_UNSEEN in text and shortened >= 2 and left >= 1, text
    assert text.index(alarm_render.MIG_UNSEEN) > text.index(" Managed by gpudash (alarms/user.py, rule user-rule).")
    assert not re.search(r"\w\]$|\w\.\.\.", text.replace(NOTES_DOC + "]", ""))  # no word cut
    whole = len(f"{alarm.title}. {sentence} Runbook: {RUNBOOK}") + len(alarm_text.made_by(alarm)) + len(
        alarm_text.written(notes))
    assert whole > 2 * DESCRIPTION_LIMIT  # what would have been cut mid-sentence before


# a user's title, sentence and runbook with emoji (outside Unicode's basic plane: 2 UTF-16 units each)
EMOJI_TITLE = "\U0001F525 Training fleet \U0001F6A8 stuck"
EMOJI_LONG = LONG.replace("; when", " \U0001F4C9\U0001F4C9; when").replace(" so the", " \U0001F6A8 so the") * 1


def test_emoji_count_two_each_as_cloudwatch_may_count_them():
    assert alarm_text.length("\U0001F525a\u00e9") == 4 and alarm_text.length("") == 0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())))
def test_a_length_is_its_characters_and_one_more_for_each_outside_the_basic_plane(text):
    """Any text, lone surrogates (which Python strings may hold) counting 1 as a Java string counts them."""
    assert alarm_text.length(text) == len(text) + sum(1 for character in text if ord(character) > 0xFFFF)


def test_a_description_with_emoji_fits_in_utf16_units_and_keeps_its_runbook():
    """With emoji in the title, own sentence and runbook the notes give way where their characters alone would fit
    but their UTF-16 units would not (PutMetricAlarm may count those)."""
    runbook = RUNBOOK + " \U0001F4DE page the owner \U0001F4DF"
    alarm = Alarm("user-rule", EMOJI_TITLE, Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)), "<", 5),
                  description=EMOJI_LONG, runbook=runbook, defined_at="alarms/user.py:3")
    emoji = alarm_text.length(f"{EMOJI_TITLE}. {EMOJI_LONG}{runbook}") - len(f"{EMOJI_TITLE}. {EMOJI_LONG}{runbook}")
    assert emoji >= 6
    made = alarm_text.length(f"{alarm.title}. {EMOJI_LONG} Runbook: {runbook}{alarm_text.made_by(alarm)}")
    filler = Note("y" * (DESCRIPTION_LIMIT - made - len(" On CloudWatch: .") + emoji // 2), "short y")
    assert len(described(alarm, [])) + len(alarm_text.written([filler])) <= DESCRIPTION_LIMIT  # fits in characters
    text = described(alarm, [filler])
    _checked(alarm, [filler], None, None, text)
    assert "short y" in text and alarm_text.length(text) <= DESCRIPTION_LIMIT, alarm_text.length(text)


def test_an_own_sentence_with_emoji_is_cut_to_utf16_units_at_a_word():
    """The own sentence's cut counts an emoji 2: the text is within 1,024 UTF-16 units, cut at a word, runbook
    whole."""
    long = " ".join(f"\U0001F525 Sentence {k} of a description \U0001F6A8 far too long." for k in range(40))
    runbook = RUNBOOK + " \U0001F4DE"
    alarm = Alarm("wordy", EMOJI_TITLE, Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90),
                  description=long, runbook=runbook, defined_at="alarms/user.py:3")
    text = described(alarm)
    assert alarm_text.length(text) <= DESCRIPTION_LIMIT, alarm_text.length(text)
    head = text.partition(ELIDED)[0]
    assert f"{EMOJI_TITLE}. {long}".startswith(head) and f"{EMOJI_TITLE}. {long}"[len(head)] == " "
    assert text.endswith(f"{ELIDED} Runbook: {runbook}{alarm_text.made_by(alarm)}"), text[-200:]


def test_a_gap_note_in_its_short_form_is_still_read_by_lint():
    """AL018 reads which gap a `> 0` alarm's description says: whole or short."""
    for kind in GAP_TEXTS:
        assert gap_said(f"x. Runbook: y. On CloudWatch: {GAP_SHORT[kind]}; z.") == kind


def test_an_own_sentence_too_long_is_cut_at_a_word_before_its_runbook_and_lint_errs(tmp_path):
    """The own sentence gives way only when nothing else can: cut at a sentence or word, marked, the runbook whole;
    lint AL026 errs."""
    from generator.lint.runner import lint_input
    from generator.lint.cloudwatch_rules import alarm_descriptions

    long = " ".join(f"Sentence {k} of a description far too long for CloudWatch to hold whole." for k in range(30))
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    yield Alarm('wordy', 'Wordy', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('node', 'gpu')), "
              f"'>', 90), description={long!r}, runbook={RUNBOOK!r})\n")
    project = defined_project(tmp_path, "", alarms=alarms)
    artifacts = build(project)
    (text,) = [a.request["AlarmDescription"] for a in artifacts.alarms]
    assert alarm_text.length(text) <= DESCRIPTION_LIMIT and f"{ELIDED} Runbook: {RUNBOOK} Managed by gpudash (" in text, text
    head = text.partition(ELIDED)[0]
    assert f"Wordy. {long}".startswith(head) and f"Wordy. {long}"[len(head)] == " "  # a whole sentence or word
    assert re.search(r"\[1 note left out: " + re.escape(NOTES_DOC) + r"\]$", text), text[-100:]  # stale
    found = list(alarm_descriptions(lint_input(project, artifacts)))
    assert [(f.rule, f.severity) for f in found] == [("AL026", "error")], found
    assert "its own sentence was cut" in found[0].message, found[0].message


def test_a_runbook_that_cannot_fit_is_refused_by_generate(tmp_path):
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    yield Alarm('wordy', 'Wordy', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('node', 'gpu')), "
              f"'>', 90), description='x', runbook={'Step. ' * 200!r})\n")
    with pytest.raises(InputError) as refused:
        build(defined_project(tmp_path, "", alarms=alarms))
    assert "'wordy'" in str(refused.value) and "runbook" in str(refused.value) and "alarms.py" in refused.value.where


def test_the_bundled_alarms_fit_whole_where_they_did_and_keep_their_runbook(monkeypatch, tmp_path):
    """Bundled alarms on every pipeline and source: whole runbook, no own sentence cut, notes counted when cut."""
    for name, settings in SETTINGS.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "gpudash.yaml").write_text(settings)
        calls = []
        original = alarm_render.described

        def recording(alarm, notes=(), own=None, title=None, calls=calls):
            notes = list(notes)
            calls.append((alarm, [n for n in notes if n.text], own, title, original(alarm, notes, own, title)))
            return calls[-1][-1]
        monkeypatch.setattr(alarm_render, "described", recording)
        from generator.project import load_project
        made = build(load_project(folder / "gpudash.yaml"), grafana=False).alarms
        monkeypatch.undo()
        written = {a.request["AlarmDescription"] for a in made}
        for call in calls:
            if call[-1] in written:
                _checked(*call)


def test_every_short_form_says_what_its_whole_note_says_a_user_needs():
    """Each short form keeps FACTS its whole note says: a failed scrape's (with DCGM's blank on the OTel pipeline, 0.7
    of a GPU where the rule counts 1), when a stale contributor's rule clears, the worked figures, the lint rule."""
    from generator.render.alarms import failed_scrape_short, stale
    from generator.cloudwatch_query import failed_scrape_note

    notes = [Note(text, short) for text, short in alarm_render.SHORT.items()]
    for how, comparison, blanks, (period, interval) in [
            (h, c, b, p) for h in ("count", "sum", "avg") for c in ("<", ">") for b in (0, 1)
            for p in ((300, 30), (60, 30), (60, 15), (90, 30), (60, 60), (600, 60))]:
        said = (how, comparison, period, interval)
        notes.append(Note(failed_scrape_note(*said, blanks=bool(blanks)), failed_scrape_short(*said, blanks=bool(blanks))))
    for extra in ({}, {"missing_data": "breaching"}, {"missing_data": "notBreaching", "evaluation_periods": 3},
                  {"evaluation_periods": 5, "datapoints_to_alarm": 2}):
        for by in ((), ("pod",)):
            notes.append(stale(Alarm("a", "A", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", by), ">", 90), **extra),
                               bundled_project().catalog, bundled_project().settings))
    assert [(n.short, _facts_dropped(n)) for n in notes if _facts_dropped(n)] == []
    blank = [n.short for n in notes if "DCGM's blank" in n.text and "3 of 10" in n.text]
    assert blank and all("3 of 10 scrapes reads 0.7, the rule's 1" in short for short in blank), blank
    # a partly blank GPU is a share between 0 and 1 of one, and only where a period holds several scrapes
    shares = [float(m.group(1)) for n in notes for m in re.finditer(r"blank at \d+ of \d+: (-?[\d.]+)", n.text)]
    assert shares and all(0 < share < 1 for share in shares), shares
    assert "blank at 1 of 2: 0.5 of it" in failed_scrape_note("count", "<", 60, 30, blanks=True)
    assert "blank" not in failed_scrape_note("count", "<", 60, 60, blanks=True) + failed_scrape_short(
        "count", "<", 60, 60, blanks=True) + failed_scrape_note("avg", "<", 60, 60, blanks=True)
    assert sum("clears 15 minutes after the last reading" in n.short for n in notes) >= 2


def _data_missing_abouts() -> list:
    """Every data-missing alarm's own text gpudash writes (data_missing.About), over pipelines, MIG, periods and the
    add-on's collection intervals."""
    from generator import data_missing

    abouts = [data_missing.ADDON_DESCRIPTION]
    for settings_text in ("", "agent:\n  pipeline: classic\n", "agent:\n  pipeline: classic\nexporter:\n  mig: none\n",
                          "scrape:\n  interval: 15s\n"):
        settings = bundled_project(settings_text).settings
        for period, periods in ((60, 1), (300, 2), (600, 3)):
            abouts += [data_missing.agent_description(settings, period, periods),
                       data_missing.per_node_description(settings, period * periods),
                       data_missing.per_gpu_description(settings, "DCGM_FI_DEV_GPU_TEMP", period, periods)]
    for intervals in ((60, 60), (30, 15), (60, 10)):
        abouts.append(data_missing.addon_gpu_description(300, *intervals))
    return abouts


def test_the_data_missing_alarms_further_sentences_give_way_to_short_forms_that_keep_their_fact():
    """Each further sentence of a data-missing alarm's own text has a short form, a sentence shorter than it, that
    keeps FACTS it says (what does not fire it, which alarm does, where to look, the figures)."""
    notes = [Note(text, short) for about in _data_missing_abouts() for text, short in about[1:]]
    assert len(notes) > 40
    assert [n.text for n in notes if not n.short or len(n.short) >= len(n.text) or not n.short.endswith(".")] == []
    assert [(n.short, _facts_dropped(n)) for n in notes if _facts_dropped(n)] == []
    kinds = {pattern for n in notes for pattern, _ in FACTS if re.search(pattern, n.text)}
    assert len(kinds) >= 10, kinds  # the facts above are each said by some sentence


def test_a_data_missing_alarm_with_a_long_runbook_shortens_its_further_sentences_before_leaving_them_out():
    """Where a user's runbook leaves no room for the data-missing alarms' own text whole, its further sentences give
    way to their short forms (counted), and only then are left out."""
    from generator import data_missing

    about = data_missing.per_gpu_description(bundled_project().settings, "DCGM_FI_DEV_GPU_TEMP", 300, 2)
    alarm = Alarm("data-missing", "No GPU data", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1),
                  absent=True, missing_data="breaching", runbook=RUNBOOK * 2, defined_at="alarms/user.py:3")
    text = alarm_render._about(alarm, about, "No GPU data (per GPU)")
    own, notes = alarm_text.about_notes(about)
    shortened, left = _checked(alarm, list(notes), own, "No GPU data (per GPU)", text)
    assert shortened >= 2 and all(n.text in text or n.short in text for n in notes[:shortened - left]), text
    assert alarm_text.length(text) <= DESCRIPTION_LIMIT


def test_the_add_on_pod_mean_weighs_a_gpu_named_in_turn_and_says_so(tmp_path):
    """The add-on's agent publishes each GPU's collection at the pod's dimension set, and its exporter names a GPU pods
    share under one of them at a time: a pod's AVG pools the collections, so a GPU named under it at half of them
    weighs half (the add-on model's datapoints), as on the agent's pipelines: its alarm's description says so."""
    from tests.support.container_insights_addon import datapoints
    from tests.support.dcgm_fleet import Gpu

    own, shared = Gpu("ip-10-0-1-1", 0, "ml", "train-0"), Gpu("ip-10-0-1-1", 1, "ml", "train-0")
    other = Gpu("ip-10-0-1-1", 1, "ml", "infer-1")
    points = [p for t in range(0, 300, 60) for p in datapoints("c", t, t, gpus=(own, shared if t % 120 == 0 else other),
                                                                metrics={"pod_gpu_power_draw"})]
    pod = [p.value for p in points if p.dims() == {"ClusterName": "c", "Namespace": "ml", "PodName": "train",
                                                   "FullPodName": "train-0"}]
    mine = [p for p in points if p.dims().get("GpuDevice") and p.dims().get("FullPodName") == "train-0"
            and "ContainerName" not in p.dims()]
    means = [sum(v) / len(v) for v in ([p.value for p in mine if p.dims()["GpuDevice"] == d]
                                       for d in ("nvidia0", "nvidia1"))]
    assert len(pod) == 5 + 3 and abs(sum(pod) / len(pod) - sum(means) / 2) > 1  # pooled, not each GPU's mean
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              "    yield Alarm('pod-power', 'Pod power', Condition(Query('DCGM_FI_DEV_POWER_USAGE', 'avg', ('pod',)), "
              "'>', 250))\n"
              "    yield Alarm('pod-gpu-power', 'Pod GPU power', Condition(Query('DCGM_FI_DEV_POWER_USAGE', 'avg', "
              "('pod', 'gpu')), '>', 250))\n")
    from generator.cloudwatch_query import NAMED_WEIGHED_COLLECTIONS as NAMED_WEIGHED
    made = {a.request["AlarmName"]: a.request["AlarmDescription"]
            for a in build(defined_project(tmp_path, "cloudwatch:\n  source: container-insights\n",
                                           alarms=alarms), grafana=False).alarms}
    (pod_mean,) = [text for name, text in made.items() if "-pod-power-" in name]
    (per_gpu,) = [text for name, text in made.items() if "-pod-gpu-power-" in name]
    assert NAMED_WEIGHED in pod_mean and NAMED_WEIGHED not in per_gpu, made


# notes that had no short form and were only left out (DCGM's blank on the add-on, MIG GPUs not evaluated, what the
# data-missing alarm reads and does not see): each is now kept, whole or short, with its consequence
KEPT = [r"DCGM's blank (?:\(about 9\.2e18 or 1\.4e14: no reading\) )?is a reading", r"MIG (?:GPUs|instances) (?:are )?not evaluated|"
        r"GPUs split into MIG instances are not evaluated", r"(?:reads|reads one exporter|reads the exporter) DaemonSet",
        r"crash loop"]


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_notes_without_a_short_form_before_have_one_that_keeps_the_consequence(name, monkeypatch, tmp_path):
    recorded = _recorded(monkeypatch, SETTINGS[name], tmp_path, _alarms(STATIC_LEFT_OUT.get(name, frozenset())))
    targets = [(call[0].id, note, call[-1]) for call in recorded for note in call[1]
               if any(re.search(pattern, note.text) for pattern in KEPT)]
    assert all(note.short and not _facts_dropped(note) for _, note, _ in targets), \
        [(i, n.text, n.short, _facts_dropped(n)) for i, n, _ in targets if not n.short or _facts_dropped(n)]
    assert targets
    lost = [(i, note.text) for i, note, text in targets if note.text not in text and note.short not in text]
    assert lost == [], lost
