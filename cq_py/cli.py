"""The ``cq`` command line: run a CQL script over files, or explain its plan.

::

    cq run examples/sensors/sensors.cql --input readings=examples/sensors/readings.csv --output out/
    cq explain examples/sensors/sensors.cql
    cq replay examples/sensors/sensors.cql --input readings=examples/sensors/readings.csv -k 100

Inputs stream through in bounded memory: each file is read in batches, the inputs are merged in
time order and pushed to the engine, and with ``--output`` every query's results are appended to
``DIR/<query>.<ext>`` as they become final (under a temporary name, moved into place when the run
succeeds). With ``--spark [MASTER]`` the script runs on Spark instead (:mod:`cq_py.spark`): Spark
reads the files and runs the engines; the outputs are the same files. Paths are relative to the
directory ``cq`` runs in, also with ``--spark``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, ParamSpec, TypeVar

import click
import pyarrow as pa
import pyarrow.csv as pacsv
from tqdm import tqdm

import cq_py
from cq_py.engine import EXECUTORS, LIFETIMES, OP, TIME_UNITS
from cq_py.errors import (
    CallbackError,
    CQError,
    CQLSemanticError,
    CQLSyntaxError,
    InputError,
    MemoryLimitError,
    RunawayLoopError,
)
from cq_py.io.readers import detect_format, merge_by_time, open_input, row_count, source_line
from cq_py.io.writers import EXTENSIONS, OutputFormat, QueryWriter, open_writer
from cq_py.replay import SPIN_S, replay

__all__ = ["cli", "main"]

P = ParamSpec("P")
R = TypeVar("R")


class CQFailure(click.ClickException):
    """A failure of the run itself (not of the command line): ``cq: error: ...``, exit code 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"cq: error: {self.format_message()}", err=True, file=file)


def _describe(exc: BaseException) -> str:
    """One line for an exception that ends a run: cq's own message, an I/O failure with its file,
    or what running out of memory or stack means here."""
    if isinstance(exc, CallbackError) and exc.__cause__ is not None:
        return _describe(exc.__cause__)  # the callbacks are cq's own writers: their failure
    if isinstance(exc, RunawayLoopError):
        bound = next(
            (b for b in ("max_loop_rows", "max_loop_ticks") if f"{b}=" in str(exc)),
            "max_loop_steps",
        )
        return f"{exc} (cq run: --{bound.replace('_', '-')} N)"
    if isinstance(exc, MemoryLimitError):
        return f"{exc} (cq run: --max-memory SIZE)"
    if isinstance(exc, CQError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, MemoryError):
        return (
            "out of memory: the engine's state outgrew this machine (windows over unbounded "
            "input, such as [Range Unbounded], relations and GROUP BY over them, keep every "
            "row: see docs/USER_GUIDE.md, 'Memory')"
        )
    if isinstance(exc, RecursionError):
        return "the script is nested too deeply for cq (Python's recursion limit was reached)"
    return (
        f"unexpected {type(exc).__name__}: {exc} (please report it; CQ_TRACEBACK=1 shows "
        "the traceback)"
    )


def _reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn every failure into ``cq: error: <one line>`` and exit 1: cq's own exceptions, I/O
    failures, and running out of memory or stack; never a traceback, unless CQ_TRACEBACK=1 asks
    for one."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (Exception, MemoryError, RecursionError) as exc:
            if os.environ.get("CQ_TRACEBACK") and not isinstance(exc, (CQError, OSError)):
                raise
            raise CQFailure(_describe(exc)) from exc

    return wrapper


def _parse_inputs(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> list[tuple[str, Path]]:
    """Check every ``NAME=PATH`` before anything runs: the shape, the file and its format."""
    parsed: list[tuple[str, Path]] = []
    seen: set[str] = set()
    for value in values:
        name, sep, path = value.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise click.BadParameter(
                f"expected NAME=PATH (e.g. readings=data/readings.csv), found {value!r}",
                ctx=ctx,
                param=param,
            )
        if name.lower() in seen:
            raise click.BadParameter(
                f"stream {name!r} is given more than once", ctx=ctx, param=param
            )
        seen.add(name.lower())
        if not Path(path).exists():
            raise click.BadParameter(
                f"input file {path!r} for stream {name!r} does not exist", ctx=ctx, param=param
            )
        if Path(path).is_dir():
            raise click.BadParameter(
                f"input {path!r} for stream {name!r} is a directory, expected a file",
                ctx=ctx,
                param=param,
            )
        try:
            detect_format(path)
        except CQError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
        parsed.append((name, Path(path)))
    return parsed


def _read_script(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CQFailure(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _load_script(path: Path, options: dict[str, Any]) -> cq_py.Engine:
    """An engine with ``options`` and ``path``'s streams and queries registered; CQL errors name
    the file."""
    text = _read_script(path)
    eng = cq_py.Engine(**options)
    try:
        eng.execute(text)
    except (CQLSyntaxError, CQLSemanticError) as exc:
        raise CQFailure(f"{path}: {exc}") from exc
    return eng


if TYPE_CHECKING:  # recent click types a ParamType by its value; older releases take no arguments
    _IntParamType = click.ParamType[int, Any]
else:
    _IntParamType = click.ParamType


class _Size(_IntParamType):
    """A number of bytes: 1000000, 512K, 512M, 4G, 1.5G (powers of 1024)."""

    name = "size"
    _UNITS: ClassVar[dict[str, int]] = {
        "": 1,
        "B": 1,
        "K": 2**10,
        "KB": 2**10,
        "M": 2**20,
        "MB": 2**20,
        "G": 2**30,
        "GB": 2**30,
        "T": 2**40,
        "TB": 2**40,
    }

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
        unit = match[2].upper() if match else None
        if match is None or unit not in self._UNITS or float(match[1]) * self._UNITS[unit] < 1:
            self.fail(
                f"expected a size such as 4G, 512M or 1000000 (bytes); found {value!r}", param, ctx
            )
        return int(float(match[1]) * self._UNITS[unit])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(cq_py.__version__, prog_name="cq")
def cli() -> None:
    """cq: continuous queries in CQL over streams of timestamped rows."""


@cli.command("run", short_help="Run a script over input files.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--input",
    "-i",
    "inputs",
    multiple=True,
    metavar="NAME=PATH",
    callback=_parse_inputs,
    help="Feed stream or relation NAME from a .csv, .parquet/.pq or "
    ".jsonl/.ndjson/.json file (repeatable); a relation's file holds changes, "
    "with an op column of '+' (insert) and '-' (delete).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write each query's results to DIR/<query>.<ext> (created if needed); "
    "without it, results are printed to stdout as CSV.",
)
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(list(EXTENSIONS)),
    default=None,
    help="Output format with --output  [default: csv]",
)
@click.option(
    "--ts",
    default="ts",
    show_default=True,
    metavar="COLUMN",
    help="The inputs' timestamp column (integer ticks or an Arrow timestamp).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=65536,
    show_default=True,
    help="Rows per batch read from each input and run through the engine at a time.",
)
@click.option(
    "--time-unit",
    type=click.Choice(TIME_UNITS),
    default="ms",
    show_default=True,
    help="What one tick is: durations and timestamp inputs are read in this unit.",
)
@click.option(
    "--auto-delay",
    is_flag=True,
    help="Insert an ε delay into each loop that has none (paper 000 §3.1).",
)
@click.option(
    "--lifetime",
    type=click.Choice(LIFETIMES),
    default="direct",
    show_default=True,
    help="How results' lifetimes are kept: direct (expiration times) or negative "
    "(negative tuples).",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="dts",
    show_default=True,
    help="The scheduler: dts (delay-aware, runs loops), heartbeat or scheduled (paper 002, "
    "round robin, one row per evaluation).",
)
@click.option(
    "--hybrid/--no-hybrid",
    default=True,
    show_default=True,
    help="dts: split time per instant only inside loops (--no-hybrid: everywhere).",
)
@click.option(
    "--max-loop-steps",
    type=click.IntRange(min=1, max=2**63 - 1),
    default=1_000_000,
    show_default=True,
    metavar="N",
    help="ε steps a loop may take within one tick before it is a runaway.",
)
@click.option(
    "--max-loop-ticks",
    type=click.IntRange(min=1, max=2**63 - 1),
    default=1_000_000,
    show_default=True,
    metavar="N",
    help="Ticks past its inputs' progress at which a loop may still produce rows "
    "(after the input ends) before it is a runaway.",
)
@click.option(
    "--max-loop-rows",
    type=click.IntRange(min=1, max=2**63 - 1),
    default=10_000_000,
    show_default=True,
    metavar="N",
    help="Rows that may go round a loop in one tick, or past its inputs' progress in "
    "all, before it is a runaway.",
)
@click.option(
    "--max-memory",
    type=_Size(),
    default=None,
    metavar="SIZE",
    help="Stop with an error when the process's memory passes SIZE (e.g. 4G, 512M): "
    "windows over unbounded input keep every row they have seen.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1, max=1024),
    default=None,
    metavar="N",
    help="Run N engines at once, each on one part of the input, when the script has a "
    "partition key (as on Spark); a script without one runs on one engine and says why  "
    "[default: the machine's cores].",
)
@click.option(
    "--no-input",
    is_flag=True,
    help="Run the script with no --input at all: its streams and relations stay empty.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--spark",
    "spark_master",
    is_flag=False,
    flag_value="local[*]",
    default=None,
    metavar="[MASTER]",
    help="Run on Spark (master URL, default local[*]): inputs are read by Spark, split "
    "by a partition key proved safe, one engine per partition; the outputs are "
    "the files a local run writes. Paths are on this machine (on a cluster, a "
    "file system the workers share).",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    help="With --spark: how many partitions [default: Spark's default parallelism].",
)
@_reports_errors
def run_command(
    script: Path,
    inputs: list[tuple[str, Path]],
    output: Path | None,
    fmt: OutputFormat | None,
    ts: str,
    batch_size: int,
    time_unit: str,
    auto_delay: bool,
    lifetime: str,
    executor: str,
    hybrid: bool,
    max_loop_steps: int,
    max_loop_ticks: int,
    max_loop_rows: int,
    max_memory: int | None,
    threads: int | None,
    no_input: bool,
    quiet: bool,
    spark_master: str | None,
    partitions: int | None,
) -> None:
    """Run SCRIPT over the --input files until they end, then report every query's output.

    Output files are written under temporary names and moved into place when the run succeeds:
    a failed run leaves DIR as it was.

    \b
    Example:
      cq run examples/sensors/sensors.cql \\
         --input readings=examples/sensors/readings.csv --output out/
    """
    if fmt is not None and fmt != "csv" and output is None:
        raise click.UsageError(f"--format {fmt} needs --output DIR (stdout is always CSV)")
    options = {
        "time_unit": time_unit,
        "auto_delay": auto_delay,
        "lifetime": lifetime,
        "executor": executor,
        "hybrid": hybrid,
        "max_loop_steps": max_loop_steps,
        "max_loop_ticks": max_loop_ticks,
        "max_loop_rows": max_loop_rows,
        "max_memory": max_memory,
        "batch_size": batch_size,
    }
    if spark_master is not None:
        if threads is not None:
            raise click.UsageError(
                "--threads is for a run on this machine; with --spark, --partitions splits "
                "the input"
            )
    else:
        options["threads"] = threads
    eng = _load_script(script, options)

    streams = {s.lower(): s for s in eng.stream_names()}
    for name, _ in inputs:
        if name.lower() not in streams:
            known = ", ".join(streams.values()) or "(none)"
            raise click.BadParameter(
                f"{script} registers no stream or relation {name!r}; its "
                f"streams and relations: {known}",
                param_hint="'--input'",
            )
    fed = {s.lower(): s for s in eng.input_names()}
    _check_inputs_cover(script, fed, inputs, no_input)
    relations = set(eng.relation_names())
    if spark_master is not None:
        _run_on_spark(
            script, eng, inputs, output, fmt or "csv", ts, options, spark_master, partitions
        )
        return
    if partitions is not None:
        raise click.UsageError("--partitions needs --spark")

    writers: dict[str, QueryWriter] = {}
    try:
        with ExitStack() as stack:
            if output is not None:
                for query in eng.query_names():
                    writer = open_writer(
                        output, query, fmt or "csv", eng.query_schema(query), staged=True
                    )
                    writers[query] = writer
                    eng.subscribe(query, writer.write)
            _feed(eng, streams, inputs, relations, ts, batch_size, time_unit, quiet, stack)
            eng.close()
        for writer in writers.values():
            writer.commit()
    except BaseException as exc:
        for writer in writers.values():
            writer.discard()
        failure = _with_output_note(exc, output, bool(writers))
        if failure is exc:
            raise
        raise failure from exc

    if output is not None:
        for query, writer in writers.items():
            click.echo(f"{query}: {writer.rows} rows -> {writer.path}")
    else:
        for query in eng.query_names():
            _print_csv(query, eng.fetch(query))


@cli.command("replay", short_help="Replay input files at a pace and measure latency.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--input",
    "-i",
    "inputs",
    multiple=True,
    metavar="NAME=PATH",
    callback=_parse_inputs,
    help="Feed stream or relation NAME from a file, as for cq run (repeatable).",
)
@click.option(
    "--speed",
    "-k",
    type=click.FloatRange(min=0, min_open=True),
    required=True,
    help="Event time runs this many times faster than the wall clock (1: real time).",
)
@click.option("--ts", default="ts", show_default=True, metavar="COLUMN")
@click.option("--time-unit", type=click.Choice(TIME_UNITS), default="ms", show_default=True)
@click.option("--lifetime", type=click.Choice(LIFETIMES), default="direct", show_default=True)
@click.option("--executor", type=click.Choice(EXECUTORS), default="dts", show_default=True)
@click.option(
    "--mqo/--no-mqo",
    default=True,
    show_default=True,
    help="Group and share MASTER queries (paper 001's optimizer).",
)
@click.option(
    "--latencies",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write each arrival's event time, latency and service time (ms) to FILE as CSV.",
)
@click.option(
    "--spin",
    type=click.FloatRange(min=0),
    default=SPIN_S,
    show_default=True,
    metavar="SECONDS",
    help="Sleep between arrivals until this long before the next is due, then spin: longer "
    "keeps the CPU (and its caches) the replay's, as a back-to-back run does, at the cost of a "
    "busy core.",
)
@_reports_errors
def replay_command(
    script: Path,
    inputs: list[tuple[str, Path]],
    speed: float,
    ts: str,
    time_unit: str,
    lifetime: str,
    executor: str,
    mqo: bool,
    latencies: Path | None,
    spin: float,
) -> None:
    """Replay the --input files into SCRIPT as their timestamps come due at --speed times the
    wall clock, every query subscribed, and report each arrival's latency: from when it was due
    until the results it brings reached the subscribers (paper 001 §5's measure).

    \b
    Example:
      cq replay examples/sensors/sensors.cql \\
         --input readings=examples/sensors/readings.csv --speed 1000
    """
    eng = _load_script(
        script,
        {
            "time_unit": time_unit,
            "lifetime": lifetime,
            "executor": executor,
            "mqo": mqo,
            "threads": 1,
        },
    )
    streams = {s.lower(): s for s in eng.stream_names()}
    for name, _ in inputs:
        if name.lower() not in streams:
            known = ", ".join(streams.values()) or "(none)"
            raise click.BadParameter(
                f"{script} registers no stream or relation {name!r}; its "
                f"streams and relations: {known}",
                param_hint="'--input'",
            )
    fed = {s.lower(): s for s in eng.input_names()}
    _check_inputs_cover(script, fed, inputs, False)
    relations = set(eng.relation_names())
    rows = [0]
    for query in eng.query_names():
        eng.subscribe(query, lambda batch: rows.__setitem__(0, rows[0] + batch.num_rows))
    sources = {
        streams[name.lower()]: open_input(
            path, schema=_input_schema(eng, streams[name.lower()], relations)
        )
        for name, path in inputs
    }
    report = replay(eng, sources, speed, ts=ts, spin=spin)
    click.echo(f"{report.summary()}; {rows[0]} result rows")
    if latencies is not None:
        pacsv.write_csv(
            pa.table(
                {
                    "ts": report.ticks,
                    "latency_ms": report.latencies * 1000,
                    "service_ms": report.services * 1000,
                }
            ),
            latencies,
        )


def _check_inputs_cover(
    script: Path, streams: dict[str, str], inputs: list[tuple[str, Path]], no_input: bool
) -> None:
    """A script whose streams get no input at all is almost surely a slip: refused, unless
    --no-input says so. A stream left out of several gets a warning."""
    if no_input and inputs:
        raise click.UsageError(
            "--no-input runs the script with no input: drop it, or the --input options"
        )
    if no_input or not streams:
        return
    if not inputs:
        raise click.UsageError(
            f"no --input given: {script} reads {', '.join(streams.values())}; give --input "
            "NAME=PATH for each (or --no-input to run it with none)"
        )
    given = {name.lower() for name, _ in inputs}
    for key, name in streams.items():
        if key not in given:
            click.echo(f"cq: warning: no --input for '{name}': it stays empty", err=True)


def _feed(
    eng: cq_py.Engine,
    streams: dict[str, str],
    inputs: list[tuple[str, Path]],
    relations: set[str],
    ts: str,
    batch_size: int,
    time_unit: str,
    quiet: bool,
    stack: ExitStack,
) -> None:
    """Streams the input files into ``eng`` in time order; errors in the data name the file and
    the line (or the row of a Parquet file)."""
    paths = {streams[name.lower()]: path for name, path in inputs}
    # A relation's file holds changes: its op column ('+' / '-') is read as text.
    sources = {
        stream: open_input(
            path, batch_size=batch_size, schema=_input_schema(eng, stream, relations)
        )
        for stream, path in paths.items()
    }
    # A total only when every input knows its size cheaply; a partial one would mislead.
    known = [n for n in map(row_count, paths.values()) if n is not None]
    total = sum(known) if len(known) == len(paths) else None
    bar = stack.enter_context(_progress(total, disabled=quiet))
    pushed = dict.fromkeys(paths, 0)
    merged = merge_by_time(sources, ts=ts, time_unit=time_unit)
    while True:
        try:
            stream, batch = next(merged)
        except StopIteration:
            return
        except InputError as exc:
            # Timestamps are checked as the files are merged; rows count from the file's start.
            # A file that cannot be read says where itself.
            if exc.stream not in paths:
                raise
            raise CQFailure(_located(exc, paths[exc.stream], exc.row)) from exc
        try:
            eng.push(stream, batch, ts=ts)
        except InputError as exc:
            # The engine counts rows within one push; the user wants the place in the file.
            row = pushed[stream] + exc.row if exc.row is not None else None
            raise CQFailure(_located(exc, paths[stream], row)) from exc
        pushed[stream] += batch.num_rows
        bar.update(batch.num_rows)


def _located(exc: InputError, path: Path, row: int | None) -> str:
    """``exc``'s message with the place of its row in ``path``: the line an editor shows (CSV,
    JSON Lines) or the 1-based data row (Parquet), in place of the row counted within a push."""
    if row is None:
        return f"{exc} (in {path})"
    line = source_line(path, row)
    place = f"line {line}" if line is not None else f"data row {row + 1}"
    message, found = re.subn(rf"\brow {exc.row}\b", place, str(exc), count=1)
    return f"{message} (in {path})" if found else f"{message} (in {path}, {place})"


def _with_output_note(exc: BaseException, output: Path | None, wrote: bool) -> BaseException:
    """``exc`` as the failure to report, saying that the outputs were not written."""
    if not wrote or output is None or not isinstance(exc, (Exception, MemoryError, RecursionError)):
        return exc
    note = f"; nothing was written to {output}/ (partial outputs removed)"
    if isinstance(exc, CQFailure):
        return CQFailure(exc.message + note)
    if isinstance(exc, click.ClickException):  # the command line's: found before any output
        return exc
    if os.environ.get("CQ_TRACEBACK") and not isinstance(exc, (CQError, OSError)):
        return exc
    return CQFailure(_describe(exc) + note)


def _run_on_spark(
    script: Path,
    eng: cq_py.Engine,
    inputs: list[tuple[str, Path]],
    output: Path | None,
    fmt: OutputFormat,
    ts: str,
    options: dict[str, Any],
    master: str,
    partitions: int | None,
) -> None:
    """``cq run --spark``: Spark reads the inputs, cq_py.spark.run runs the script, and each
    query's output becomes the file a local run writes (or, without --output, the driver prints
    it as CSV). Paths are resolved here, against the directory cq was started in: the Spark JVM
    runs in a directory of its own (cq_py.spark.files.start_session)."""
    import warnings

    try:
        from cq_py.spark import CQPartitionWarning, run
        from cq_py.spark.files import read_input, session, write_output
    except ImportError as exc:
        raise CQFailure(f"--spark needs pyspark ({exc}); pip install 'cq[spark]'") from exc
    spark, created = session(master)
    writers: list[tuple[str, QueryWriter]] = []
    try:
        streams = {s.lower(): s for s in eng.stream_names()}
        frames = {
            streams[name.lower()]: read_input(
                spark, path.absolute(), eng, streams[name.lower()], ts
            )
            for name, path in inputs
        }
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CQPartitionWarning)
            out = run(
                spark,
                _read_script(script),
                frames,
                ts=ts,
                partitions=partitions,
                persist=len(eng.query_names()) > 1,
                **options,
            )
        for w in caught:
            click.echo(f"cq: warning: {w.message}", err=True)
        for query, df in out.items():
            if output is None:
                _print_csv(query, df.toArrow())
                continue
            order = ["ts", "ts_step"] if "ts" in df.columns else ["start", "start_step"]
            writers.append(
                (
                    query,
                    write_output(
                        df,
                        output.absolute(),
                        query,
                        fmt,
                        eng.query_schema(query),
                        [c for c in order if c in df.columns],
                    ),
                )
            )
        for _, writer in writers:
            writer.commit()
    except BaseException as exc:
        for _, writer in writers:
            writer.discard()
        failure = _spark_failure(exc)
        failure = _with_output_note(failure, output, output is not None)
        if failure is exc:
            raise
        raise failure from exc
    finally:
        if created:
            spark.stop()
    for query, writer in writers:
        assert output is not None
        click.echo(f"{query}: {writer.rows} rows -> {output / Path(writer.path).name}")


def _spark_failure(exc: BaseException) -> BaseException:
    """A failure inside a Spark task reaches the driver wrapped in Spark's exception: cq's own
    error (bad data found by an engine) as cq reports it, anything else briefly."""
    if exc.__class__.__module__.startswith(("pyspark", "py4j")):
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        ours = [
            line.split(": ", 1)[1]
            for line in lines
            if line.startswith("cq_py.errors.") and ": " in line
        ]
        if ours:
            return CQFailure(f"{ours[-1]} (in a Spark task)")
        return CQFailure(f"Spark job failed: {lines[0] if lines else type(exc).__name__}")
    return exc


def _input_schema(eng: cq_py.Engine, name: str, relations: set[str]) -> pa.Schema:
    """The types of the columns an input file of ``name`` must have (the timestamp aside)."""
    schema = eng.stream_schema(name)
    return schema.append(pa.field(OP, pa.string())) if name in relations else schema


def _progress(total: int | None, disabled: bool) -> tqdm:
    """A tqdm bar of rows pushed, on stderr, only when stderr is a terminal."""
    return tqdm(
        total=total,
        unit=" rows",
        unit_scale=True,
        file=sys.stderr,
        leave=False,
        disable=disabled or not _isatty(sys.stderr),
        desc="cq",
    )


def _isatty(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _print_csv(query: str, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink)
    click.echo(f"-- {query}")
    click.echo(sink.getvalue().to_pybytes().decode("utf-8"), nl=False)


@cli.command("explain", short_help="Show the plan of a script.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--time-unit",
    type=click.Choice(TIME_UNITS),
    default="ms",
    show_default=True,
    help="What one tick is (durations in the script are read in this unit).",
)
@click.option(
    "--auto-delay",
    is_flag=True,
    help="Insert an ε delay into each loop that has none (paper 000 §3.1).",
)
@_reports_errors
def explain_command(script: Path, time_unit: str, auto_delay: bool) -> None:
    """Print SCRIPT's streams, queries, operators, loops and execution order (nothing runs)."""
    try:
        text = cq_py.explain(_read_script(script), time_unit=time_unit, auto_delay=auto_delay)
    except (CQLSyntaxError, CQLSemanticError) as exc:
        raise CQFailure(f"{script}: {exc}") from exc
    click.echo(text, nl=False)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``cq`` command (and of ``python -m cq_py``).

    >>> main(["explain", "examples/sensors/sensors.cql"])  # doctest: +SKIP
    """
    cli.main(args=list(argv) if argv is not None else None, prog_name="cq")
