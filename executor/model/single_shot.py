"""The single-shot Executor: one written answer per task, for models that cannot call tools.

Code does what the tools would: it reads the references into the prompt (confined like the read
tools) and writes the model's answer to the output path through the registry's write tool (the
same confinement and approvals). The model only writes. An answer cut by the length limit is
continued where it stopped (by the gateway, up to MAX_CONTINUATIONS times); still cut, the task
fails saying in how much room and what to change; a loop is a RUNAWAY.

Also here: pure decisions about a document a model wrote as its whole answer. The published
memo is assembled by code from what the model writes (`executor.model.memo`), and its figures
that no source holds are mended once against the sources, code judging (`executor.model.revision`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import structlog

from executor.builtin import (
    TaskError,
    deliverable_title,
    in_outputs,
    known_texts,
    other_script,
    relative,
    spec_query,
)
from executor.model.loop import clipped
from executor.model.memo import (
    MemoVerdict,
    assemble_memo,
    assembly_plan,
    content_words,
    extension_topics,
    first_analysis_outline,
    is_assembly_plan,
    is_plan_file,
    rewrite_messages,
    rewrite_problems,
    verdict_messages,
    verdict_rewrite_messages,
    verdict_text,
    with_chart_links,
    without_scaffolding,
)
from executor.model.prompt import (
    MAX_PASTED_TOKENS,
    SHORT_SHARE,
    WRITE_TOOL,
    WRITER,
    NotDone,
    WritingTask,
    extension_messages,
    facts_of,
    instruction_lines,
    language_of,
    language_said,
    length_asked,
    load_template,
    material_tokens,
    prefix_of,
    task_query,
    templates,
    whole_paragraphs,
    without_echo,
    writing_messages,
)
from executor.model.references import (
    ECHO_STOPS,
    MARGIN_TOKENS,
    Source,
    analysis_words,
    estimate_tokens,
    fit_sources,
    gather_sources,
    most_words,
    read_in,
    working_words,
    writing_tokens,
)
from executor.model.revision import (
    evidence,
    flagged,
    passages_of,
    revision_messages,
    revision_schema,
    with_revisions,
)
from executor.tools import ToolContext, ToolRegistry
from multiverse.agent_package import AgentPackage
from multiverse.config import TierConfig
from multiverse.gateway import (
    TABLE_FINISH,
    ChatMessage,
    LlmAnswer,
    LlmCall,
    LlmError,
    LlmErrorCode,
    ModelCalls,
    cut_failure,
    unwrap_document,
    without_repeats,
)
from multiverse.models import PUBLISHING_PHASE
from multiverse.roles import TaskAssignment
from multiverse.spec import with_prefix
from multiverse.trace import Known

# Times a cut document is asked to go on: the whole is at most three times its room.
MAX_CONTINUATIONS = 2
# Sections added to a deliverable's analysis far shorter than asked, each on its own topic.
MAX_EXTENSIONS = 2
SECTION_MIN_WORDS = 150


VERDICT_TOKENS = 700
REVISED_OVERHEAD = 48  # tokens of JSON around each revised sentence (and the answer's)
WORKING_ROOM = 2  # max_tokens of a writing call, in multiples of its words' tokens
WORKING_PASTE_TOKENS = 6000  # of its references' text
DELIVERABLE_PASTE_TOKENS = 8000  # of its references' text, or a quarter of a larger window


def deliverable_paste(window: int) -> int:
    """The most of its references' text the deliverable's analysis is given."""
    return min(MAX_PASTED_TOKENS, max(DELIVERABLE_PASTE_TOKENS, window // 4))


CUT_NOTE = "\n\n*[Cut here: the text ran past its budget of about {words} words.]*\n"
# A working document states the facts computed from a table: it copies no table out, and a
# table it starts to copy is closed at this many rows (the stream's `table` finish).
WORKING_TABLE_ROWS = 15
TABLE_NOTE = "\n\n*[Cut here: the table went on past {rows} rows.]*\n"
log = structlog.get_logger(__name__)

MIN_CONTENT_WORDS = 1
EMPTY_NOTE = (
    "Your previous answer had a title but no content. Write the whole document now: its "
    "sections with the figures of the references, not only its title."
)


def prompt_tokens(messages: list[ChatMessage]) -> int:
    """The estimated tokens of a call's messages (their text)."""
    return estimate_tokens("".join(str(message.get("content") or "") for message in messages))


def run_charts(context: ToolContext) -> list[Path]:
    """The charts drawn for this run so far (pages holding an SVG, in its folders)."""
    found: list[Path] = []
    for folder in (context.workspace, context.outputs):
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                drawn = path.suffix.lower() in (".html", ".svg") and path.is_file()
                if drawn and "<svg" in path.read_text(encoding="utf-8", errors="replace"):
                    found.append(path)
    return found


def single_shot_version(package: AgentPackage) -> str:
    """The calls' prompt_version: the card's and every single-shot template's."""
    texts = "\0".join(template.body for template in templates())
    return f"{package.prompt_version}+single_shot@{hashlib.sha256(texts.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class SingleShot:
    """Writes one task's document with one answer of the model (two when the first is cut)."""

    gateway: ModelCalls
    tier: TierConfig
    window: int
    role: str

    def write(
        self, assignment: TaskAssignment, package: AgentPackage, registry: ToolRegistry,
        target: Path,
    ) -> None:  # fmt: skip
        """Ask for the document and write it to `target`; raises LlmError, NotDone (no
        content, twice) or TaskError."""
        home = registry.context.home
        output = relative(home, target)
        context = registry.context
        published = in_outputs(home, assignment.run_id, target)
        words = length_asked(assignment)
        spec = assignment.spec
        if spec is not None and is_assembly_plan(assignment, published):
            # Code assembles the deliverable (`_memo`), so code says how: no call.
            plan = assembly_plan(assignment.task.task_name,
                                 deliverable_title(assignment.request, spec),
                                 spec, analysis_words(words) or 0,
                                 assignment.task.related_references)  # fmt: skip
            self._written(registry, package, output, plan)
            return
        # The inputs before the run's own files: the part of the prompt the run's tasks share
        # comes first, where the provider's prefix cache can serve it.
        references = sorted(assignment.task.related_references,
                            key=lambda path: path.startswith(("runs/", "outputs/")))  # fmt: skip
        if published:
            # The deliverable shows the charts the run drew, whichever task drew them; it does
            # not read the assembly plan code wrote for code (read, a small model wrote the
            # memo's summary, recommendation and references into its analysis a second time).
            plans = relative(home, context.workspace / PUBLISHING_PHASE) + "/"
            references = [path for path in references
                          if not (path.startswith(plans) and is_plan_file(path))]  # fmt: skip
            references += [relative(home, chart) for chart in run_charts(context)]
        # A file the confirmed request leaves out is never read, even inside a folder named.
        roots = (context.workspace, context.outputs)
        material = self._material(home, assignment, context)
        # A file the run's sources show whole is not pasted twice; nor, in a working document,
        # one they show in its parts bearing on the request (with the facts computed from it,
        # that is what a working document needs: pasted again, a table's rows doubled the
        # first analysis's prompt, 10k tokens that took a small model 7 minutes to read).
        shown = {source.path for source in material
                 if source.text is not None and (not source.cut or not published)}  # fmt: skip
        sources = read_in([source for source in gather_sources(home, references, roots)
                           if source.path not in context.left_out and source.path not in shown],
                          spec.language if spec else None)  # fmt: skip
        task = WritingTask(
            assignment=assignment,
            output_path=output,
            # A deliverable's analysis is written as a working text; code assembles the memo.
            published=False,
            words=analysis_words(words) if published else working_words(words),
            sources=sources,
            facts=facts_of(home, assignment),
            material=material,
            query=task_query(assignment),
            # A working document says what its sources hold, with the facts computed from
            # them: a part of each source is enough, and a small model reads it in a minute.
            # The deliverable reads the working documents whole and the sources in the parts
            # that bear on it (a whole 13k-token table took a small model 7 minutes to read).
            paste_tokens=deliverable_paste(self.window) if published else WORKING_PASTE_TOKENS,
            body=published,
            outline=first_analysis_outline(assignment, material, sources),
        )  # fmt: skip
        # The deliverable is continued where it was cut; a working document keeps what its
        # budget holds (continuing it costs minutes of a small model's time for text no one
        # reads but the next task).
        more = MAX_CONTINUATIONS if published else 0
        echo = instruction_lines(task)  # a small model copies "700 words (at most 805)…"
        first = self._answer(task, package, more=more).text
        document = without_repeats(without_echo(unwrap_document(first), echo, markers=False))
        if content_words(document) < MIN_CONTENT_WORDS:
            # Small models sometimes stop after the title: asked once more, then it fails.
            log.info("single_shot_empty", run_id=assignment.run_id,
                     task_id=assignment.task.task_id, words=content_words(document))  # fmt: skip
            again = self._answer(task, package, EMPTY_NOTE, more).text
            document = without_repeats(without_echo(unwrap_document(again), echo, False))
        if content_words(document) < MIN_CONTENT_WORDS:
            raise NotDone(
                f"the model wrote no content for {output} (twice): "
                f"{clipped(document) or '(an empty answer)'}"
            )
        if published and content_words(document) < SHORT_SHARE * (task.words or 0):
            document = self._extended(task, package, document)
        if published:
            document = self._in_language(task, package, document)
        if not document.lstrip().startswith("# "):
            # The prompt says code writes the title: small models that are asked for one often
            # stop right after it.
            document = f"# {assignment.task.task_name}\n\n{document.strip()}\n"
        if published:
            document = self._memo(task, package, document)
        else:
            document = with_chart_links(document, task.sources, output)
        self._written(registry, package, output, document)

    @staticmethod
    def _written(registry: ToolRegistry, package: AgentPackage, output: str, text: str) -> None:
        """`text` written to `output` through the registry's write tool (its confinement)."""
        tool = package.tools[WRITE_TOOL].tool if WRITE_TOOL in package.tools else WRITE_TOOL
        result = registry.call(tool, {"path": output, "content": text})
        if not result.ok:
            raise TaskError(f"writing {output} failed: {result.error}")

    def _material(
        self, home: Path, assignment: TaskAssignment, context: ToolContext
    ) -> tuple[Source, ...]:
        """The run's sources every writing call shows first: the files the confirmed spec
        keeps, in its order, fitted to one budget (so the same bytes in every task)."""
        spec = assignment.spec
        if spec is None:
            return ()
        kept = [path for path in spec.kept() if path not in context.left_out]
        read = [source for source in read_in(gather_sources(home, kept), spec.language)
                if source.text is not None and not source.chart]  # fmt: skip
        # Cut to what bears on the request (not on the task): the same in every task.
        return tuple(fit_sources(read, material_tokens(self.window), spec_query(spec)))

    def _room(self, task: WritingTask) -> int:
        """max_tokens of a writing call: room beyond its words' tokens, so that a small model
        that writes on past them is seldom cut; the stream closes it at a paragraph's end once
        the words are written (`_call`); a deliverable cut all the same is continued."""
        max_tokens = writing_tokens(task.words, self.tier.max_tokens, language_of(task))
        return min(self.tier.max_tokens, WORKING_ROOM * max_tokens)

    def _extended(self, task: WritingTask, package: AgentPackage, document: str) -> str:
        """The deliverable's analysis continued while it is far shorter than asked: a section
        on a topic it has not covered (`extension_topics`), at most MAX_EXTENSIONS (without
        a topic, once); as it was when the window leaves no room for the continuation."""
        asked, done = task.words or 0, set()
        for count in range(MAX_EXTENSIONS):
            written = content_words(document)
            # Looked for again each time: a section may have covered more than its topic; one
            # asked for is not asked again (a small model that wrote on another would repeat).
            topics = [topic for topic in extension_topics(document, task.facts, task.sources)
                      if topic not in done]  # fmt: skip
            # Without a topic it is asked once: asked again, a small model repeats itself.
            if written >= SHORT_SHARE * asked or (count and not topics):
                break
            topic = topics[0] if topics else None
            extended = self._extend(task, package, document, written, topic)
            if extended is None:
                break
            document = extended
            done.add(topic)
        return document

    def _extend(
        self, task: WritingTask, package: AgentPackage, document: str, written: int,
        topic: str | None,
    ) -> str | None:  # fmt: skip
        """One continuation of the analysis (a section on `topic`, if given); None when the
        window leaves no room for it."""
        asked = task.words or 0
        words = min(asked - written, max(SECTION_MIN_WORDS, asked // 3)) if topic else 0
        # The deliverable's first call's messages, as `_answer` built them: the cache serves them.
        first = writing_messages(task, self.window, self._room(task))
        messages = extension_messages(first, document, written, asked, topic, words)
        # Room beyond the words missing, as a working document has: a small model that goes on
        # past them is seldom cut (at the missing words' tokens alone, 600, one was).
        missing = writing_tokens(words or asked - written, self.tier.max_tokens, language_of(task))
        tokens = min(self.tier.max_tokens, WORKING_ROOM * missing)
        if prompt_tokens(messages) + tokens > self.window - MARGIN_TOKENS:
            return None
        call = self._call(task, package, messages, tokens, "extend", words=words or asked - written)
        answer = self.gateway.complete(call)
        more = without_echo(unwrap_document(answer.text), instruction_lines(task))
        more = whole_paragraphs(more) if answer.finish_reason == "length" else more
        lines = more.strip().splitlines()
        if lines and lines[0].startswith("# "):
            lines = lines[1:]  # its title, written again
        log.info("single_shot_extended", run_id=task.assignment.run_id, words=written,
                 asked=asked, topic=bool(topic), task_id=task.assignment.task.task_id)  # fmt: skip
        return without_repeats(document.rstrip() + "\n\n" + "\n".join(lines).strip())

    def _in_language(self, task: WritingTask, package: AgentPackage, document: str) -> str:
        """The analysis rewritten once in the confirmed language when its script is another's;
        as it was when the window has no room, or the rewrite is cut, loses a figure, is far
        shorter or no better (the delivery record then says the language was not kept)."""
        spec = task.assignment.spec
        if spec is None or other_script(spec.language, document) is None:
            return document
        system = with_prefix(prefix_of(task.assignment), load_template(WRITER).body)
        messages = rewrite_messages(system, document, language_said(spec))
        tokens = min(self.tier.max_tokens, WORKING_ROOM * estimate_tokens(document))
        if prompt_tokens(messages) + tokens > self.window - MARGIN_TOKENS:
            return document
        answer = self.gateway.complete(self._call(task, package, messages, tokens, "language"))
        rewritten = without_repeats(unwrap_document(answer.text))
        kept = answer.finish_reason == "length" or bool(
            rewrite_problems(document, rewritten, spec.language, language_said(spec))
        )
        log.info("single_shot_language", run_id=task.assignment.run_id, rewritten=not kept,
                 task_id=task.assignment.task.task_id)  # fmt: skip
        return document if kept else rewritten

    def _verdict_in_language(self, task: WritingTask, package: AgentPackage, system: str,
                             verdict: MemoVerdict) -> MemoVerdict:  # fmt: skip
        """The verdict rewritten in the confirmed language when its script is another's; as it
        was when the rewrite cannot be had (the delivery record then says so)."""
        spec, said = task.assignment.spec, verdict_text(verdict)
        if spec is None or other_script(spec.language, said) is None:
            return verdict
        language = language_said(spec)
        call = self._call(task, package, verdict_rewrite_messages(system, verdict, language),
                          self.tier.answer_tokens(VERDICT_TOKENS), "verdict-language")  # fmt: skip
        try:
            return self.gateway.complete_json(call, MemoVerdict, lambda new: rewrite_problems(
                said, verdict_text(new), spec.language, language)).value  # fmt: skip
        except LlmError as error:
            log.info("single_shot_verdict_language_kept", run_id=task.assignment.run_id,
                     task_id=task.assignment.task.task_id, reason=error.code.value)  # fmt: skip
            return verdict

    def _memo(self, task: WritingTask, package: AgentPackage, analysis: str) -> str:
        """The deliverable: the analysis and the model's verdict on it, assembled by code."""
        assignment = task.assignment
        system = with_prefix(prefix_of(assignment), load_template(WRITER).body)
        messages = verdict_messages(system, analysis, task.facts, task.material,
                                    language_said(assignment.spec))  # fmt: skip
        tokens = self.tier.answer_tokens(VERDICT_TOKENS)
        call = self._call(task, package, messages, tokens, "verdict")
        verdict = self.gateway.complete_json(call, MemoVerdict).value
        verdict = self._verdict_in_language(task, package, system, verdict)
        first = analysis.strip().splitlines()[0] if analysis.strip() else ""
        # The model's own title; the request's where it kept the task's name code gave it.
        title = first[2:] if first.startswith("# ") else assignment.task.task_name
        if title.strip() == assignment.task.task_name.strip():
            title = deliverable_title(assignment.request, assignment.spec)
        body = without_scaffolding(analysis, [*task.material, *task.sources],
                                   [assignment.task.task_name])  # fmt: skip
        memo = assemble_memo(title, body, verdict, task.sources, task.output_path)
        return self._revised(task, package, system, memo)

    def _revised(self, task: WritingTask, package: AgentPackage, system: str, memo: str) -> str:
        """The memo with its sentences that state a number no source holds revised against the
        sources' nearest passages, where code accepts the revision (`executor.model.revision`);
        as it was when none does or the answer cannot be had (the closing lists the rest)."""
        assignment = task.assignment
        texts = known_texts(Path(assignment.home), assignment.run_id, assignment.request,
                            assignment.spec, facts=task.facts)  # fmt: skip
        known = Known.of(texts)
        items = flagged(memo, known)
        if not items:
            return memo
        shown = evidence(items, passages_of(texts), language_of(task) or "")
        messages = revision_messages(system, shown, language_said(assignment.spec))
        # Room for each sentence twice over, as JSON: a revision is about as long as its sentence.
        needed = REVISED_OVERHEAD * (len(items) + 1) + sum(
            2 * estimate_tokens(item.sentence) for item in items)  # fmt: skip
        call = self._call(task, package, messages, self.tier.answer_tokens(needed), "figures")
        try:
            revision = self.gateway.complete_json(call, revision_schema(len(items))).value
        except LlmError as error:
            log.info("single_shot_figures_kept", run_id=assignment.run_id,
                     task_id=assignment.task.task_id, reason=error.code.value)  # fmt: skip
            return memo
        memo, revised = with_revisions(memo, items, revision, known, language_of(task) or "")
        log.info("single_shot_figures_revised", run_id=assignment.run_id, flagged=len(items),
                 revised=revised, task_id=assignment.task.task_id)  # fmt: skip
        return memo

    def _answer(
        self, task: WritingTask, package: AgentPackage, note: str = "", more: int = 0
    ) -> LlmAnswer:
        max_tokens = self._room(task)
        messages = writing_messages(task, self.window, max_tokens, note)
        step = "write" if not note else "write-again"
        rows = None if task.body else WORKING_TABLE_ROWS
        call = self._call(task, package, messages, max_tokens, step, more, task.words, rows)
        answer = self.gateway.complete(call)
        if answer.finish_reason == "length":
            log.info("single_shot_cut", run_id=task.assignment.run_id, parts=answer.parts,
                     task_id=task.assignment.task.task_id, max_tokens=max_tokens)  # fmt: skip
            failure = cut_failure(call, answer, f"document {task.output_path}")
            kept = whole_paragraphs(without_echo(answer.text, instruction_lines(task)))
            if failure.code is LlmErrorCode.RUNAWAY or content_words(kept) < MIN_CONTENT_WORDS:
                raise failure
            # Still long after its continuations, yet no loop: large material is no failure of
            # the run. The document keeps its whole paragraphs and says it was cut.
            log.warning("single_shot_kept_cut", run_id=task.assignment.run_id,
                        task_id=task.assignment.task.task_id, parts=answer.parts)  # fmt: skip
            return answer.model_copy(update={"text": kept + CUT_NOTE.format(words=task.words)})
        written = without_echo(answer.text, instruction_lines(task))
        if answer.finish_reason == TABLE_FINISH:
            log.info("single_shot_table_closed", run_id=task.assignment.run_id,
                     task_id=task.assignment.task.task_id, rows=rows)  # fmt: skip
            written = written.rstrip() + TABLE_NOTE.format(rows=rows)
        return answer.model_copy(update={"text": written})

    def _call(
        self, task: WritingTask, package: AgentPackage, messages: list[ChatMessage],
        max_tokens: int, step: str, continuations: int = 0, words: int | None = None,
        rows: int | None = None,
    ) -> LlmCall:  # fmt: skip
        """One call of the task; a written answer stops at a paragraph's end past `words`, or
        at the end of a table's row past `rows`."""
        assignment = task.assignment
        return LlmCall(
            role=self.role,
            agent_version=package.agent_version,
            prompt_version=single_shot_version(package),
            scope=f"{assignment.run_id}:{assignment.task.task_id}:{step}",
            run_id=assignment.run_id,
            tier=package.tier.value,
            messages=messages,
            **self.tier.call_fields(),
            max_tokens=max_tokens,
            continuations=continuations,
            stop=list(ECHO_STOPS),
            stop_repeats=True,
            stop_at_words=most_words(words) if words else None,
            stop_at_rows=rows,
        )
