"""The ``cq`` command line: run a CQL script over files, or explain its plan.

::

    cq run examples/sensors/sensors.cql --input readings=examples/sensors/readings.csv --output out/
    cq explain examples/sensors/sensors.cql

Inputs stream through in bounded memory: each file is read in batches, the inputs are merged in
time order and pushed to the engine, and with ``--output`` every query's results are appended to
``DIR/<query>.<ext>`` as they become final. With ``--spark [MASTER]`` the script runs on Spark
instead (:mod:`cq_py.spark`): Spark reads the files and writes ``DIR/<query>.<ext>/``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any, TypeVar

import click
import pyarrow as pa
import pyarrow.csv as pacsv
from tqdm import tqdm

import cq_py
from cq_py.engine import OP, TIME_UNITS
from cq_py.errors import CQError, CQLSemanticError, CQLSyntaxError, InputError
from cq_py.io.readers import detect_format, merge_by_time, open_input, row_count
from cq_py.io.writers import EXTENSIONS, QueryWriter, open_writer

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])

class CQFailure(click.ClickException):
    """A failure of the run itself (not of the command line): ``cq: error: ...``, exit code 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"cq: error: {self.format_message()}", err=True, file=file)


def _reports_errors(func: F) -> F:
    """Turn cq's own exceptions (and I/O failures) into ``cq: error: <message>`` and exit 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CQError as exc:
            raise CQFailure(str(exc)) from exc
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            raise CQFailure(f"{exc.strerror or exc}{where}") from exc

    return wrapper  # type: ignore[return-value]


def _parse_inputs(ctx: click.Context, param: click.Parameter,
                  values: Sequence[str]) -> list[tuple[str, Path]]:
    """Check every ``NAME=PATH`` before anything runs: the shape, the file and its format."""
    parsed: list[tuple[str, Path]] = []
    seen: set[str] = set()
    for value in values:
        name, sep, path = value.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise click.BadParameter(
                f"expected NAME=PATH (e.g. readings=data/readings.csv), found {value!r}",
                ctx=ctx, param=param)
        if name.lower() in seen:
            raise click.BadParameter(f"stream {name!r} is given more than once", ctx=ctx,
                                     param=param)
        seen.add(name.lower())
        if not os.path.exists(path):
            raise click.BadParameter(f"input file {path!r} for stream {name!r} does not exist",
                                     ctx=ctx, param=param)
        if os.path.isdir(path):
            raise click.BadParameter(f"input {path!r} for stream {name!r} is a directory, "
                                     "expected a file", ctx=ctx, param=param)
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


def _load_script(path: Path, time_unit: str, auto_delay: bool = False) -> cq_py.Engine:
    """An engine with ``path``'s streams and queries registered; CQL errors name the file."""
    text = _read_script(path)
    eng = cq_py.Engine(time_unit=time_unit, auto_delay=auto_delay)
    try:
        eng.execute(text)
    except (CQLSyntaxError, CQLSemanticError) as exc:
        raise CQFailure(f"{path}: {exc}") from exc
    return eng


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(cq_py.__version__, prog_name="cq")
def cli() -> None:
    """cq: continuous queries in CQL over streams of timestamped rows."""


@cli.command("run", short_help="Run a script over input files.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--input", "-i", "inputs", multiple=True, metavar="NAME=PATH",
              callback=_parse_inputs,
              help="Feed stream or relation NAME from a .csv, .parquet/.pq or "
                   ".jsonl/.ndjson/.json file (repeatable); a relation's file holds changes, "
                   "with an op column of '+' (insert) and '-' (delete).")
@click.option("--output", "-o", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Write each query's results to DIR/<query>.<ext> (created if needed); "
                   "without it, results are printed to stdout as CSV.")
@click.option("--format", "-f", "fmt", type=click.Choice(list(EXTENSIONS)), default=None,
              help="Output format with --output  [default: csv]")
@click.option("--ts", default="ts", show_default=True, metavar="COLUMN",
              help="The inputs' timestamp column (integer ticks or an Arrow timestamp).")
@click.option("--batch-size", type=click.IntRange(min=1), default=65536, show_default=True,
              help="Rows per batch read from each input.")
@click.option("--time-unit", type=click.Choice(TIME_UNITS), default="ms", show_default=True,
              help="What one tick is: durations and timestamp inputs are read in this unit.")
@click.option("--auto-delay", is_flag=True,
              help="Insert an ε delay into each loop that has none (paper 000 §3.1).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--spark", "spark_master", is_flag=False, flag_value="local[*]", default=None,
              metavar="[MASTER]",
              help="Run on Spark (master URL, default local[*]): inputs are read by Spark, split "
                   "by a partition key proved safe, one engine per partition; with --output each "
                   "query is written by Spark to DIR/<query>.<ext>/ (part files).")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="With --spark: how many partitions [default: spark.sql.shuffle.partitions].")
@_reports_errors
def run_command(script: Path, inputs: list[tuple[str, Path]], output: Path | None,
                fmt: str | None, ts: str, batch_size: int, time_unit: str, auto_delay: bool,
                quiet: bool, spark_master: str | None, partitions: int | None) -> None:
    """Run SCRIPT over the --input files until they end, then report every query's output.

    \b
    Example:
      cq run examples/sensors/sensors.cql \\
         --input readings=examples/sensors/readings.csv --output out/
    """
    if fmt is not None and fmt != "csv" and output is None:
        raise click.UsageError(f"--format {fmt} needs --output DIR (stdout is always CSV)")
    eng = _load_script(script, time_unit, auto_delay)

    streams = {s.lower(): s for s in eng.stream_names()}
    for name, _ in inputs:
        if name.lower() not in streams:
            known = ", ".join(streams.values()) or "(none)"
            raise click.BadParameter(f"{script} registers no stream or relation {name!r}; its "
                                     f"streams and relations: {known}", param_hint="'--input'")
    relations = set(eng.relation_names())
    if spark_master is not None:
        _run_on_spark(script, eng, inputs, output, fmt or "csv", ts, time_unit, auto_delay,
                      spark_master, partitions)
        return
    if partitions is not None:
        raise click.UsageError("--partitions needs --spark")

    with ExitStack() as stack:
        writers: dict[str, QueryWriter] = {}
        if output is not None:
            for query in eng.query_names():
                writer = open_writer(output, query, fmt or "csv", eng.query_schema(query))
                # Closed on any exit, so an interrupted run still leaves readable files.
                stack.callback(writer.close)
                writers[query] = writer
                eng.subscribe(query, writer.write)

        paths = {streams[name.lower()]: path for name, path in inputs}
        # A relation's file holds changes: its op column ('+' / '-') is read as text.
        sources = {
            stream: open_input(path, batch_size=batch_size, schema=_input_schema(eng, stream, relations))
            for stream, path in paths.items()
        }
        # A total only when every input knows its size cheaply; a partial one would mislead.
        known = [n for n in map(row_count, paths.values()) if n is not None]
        total = sum(known) if len(known) == len(paths) else None
        bar = stack.enter_context(_progress(total, disabled=quiet))
        pushed = dict.fromkeys(paths, 0)
        for stream, batch in merge_by_time(sources, ts=ts, time_unit=time_unit):
            try:
                eng.push(stream, batch, ts=ts)
            except InputError as exc:
                # The engine counts rows within one push; the user wants the row of the file.
                row = f", data row {pushed[stream] + exc.row + 1}" if exc.row is not None else ""
                raise CQFailure(f"{exc} (in {paths[stream]}{row})") from exc
            pushed[stream] += batch.num_rows
            bar.update(batch.num_rows)
        eng.close()
    # Writers are closed on leaving the block, so the files are complete when reported.

    if output is not None:
        for query, writer in writers.items():
            click.echo(f"{query}: {writer.rows} rows -> {writer.path}")
    else:
        for query in eng.query_names():
            _print_csv(query, eng.fetch(query))


def _run_on_spark(script: Path, eng: cq_py.Engine, inputs: list[tuple[str, Path]],
                  output: Path | None, fmt: str, ts: str, time_unit: str, auto_delay: bool,
                  master: str, partitions: int | None) -> None:
    """``cq run --spark``: Spark reads the inputs, cq_py.spark.run runs the script, and Spark
    writes each query's output (or, without --output, the driver prints it as CSV)."""
    import warnings

    try:
        from cq_py.spark import CQPartitionWarning, run
        from cq_py.spark.files import read_input, session, write_output
    except ImportError as exc:
        raise CQFailure(f"--spark needs pyspark ({exc}); pip install 'cq[spark]'") from exc
    spark, created = session(master)
    try:
        streams = {s.lower(): s for s in eng.stream_names()}
        frames = {streams[name.lower()]: read_input(spark, path, eng, streams[name.lower()], ts)
                  for name, path in inputs}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CQPartitionWarning)
            out = run(spark, _read_script(script), frames, ts=ts, partitions=partitions,
                      persist=len(eng.query_names()) > 1, time_unit=time_unit,
                      auto_delay=auto_delay)
        for w in caught:
            click.echo(f"cq: warning: {w.message}", err=True)
        for query, df in out.items():
            if output is None:
                _print_csv(query, df.toArrow())
                continue
            target = write_output(df, output, query, fmt)
            click.echo(f"{query}: {df.count()} rows -> {target}/")
    except Exception as exc:
        # A failure inside a Spark task reaches the driver wrapped; its first line says what.
        if exc.__class__.__module__.startswith(("pyspark", "py4j")):
            raise CQFailure(f"Spark job failed: {str(exc).strip().splitlines()[0]}") from exc
        raise
    finally:
        if created:
            spark.stop()


def _input_schema(eng: cq_py.Engine, name: str, relations: set[str]) -> pa.Schema:
    """The types of the columns an input file of ``name`` must have (the timestamp aside)."""
    schema = eng.stream_schema(name)
    return schema.append(pa.field(OP, pa.string())) if name in relations else schema


def _progress(total: int | None, disabled: bool) -> tqdm:
    """A tqdm bar of rows pushed, on stderr, only when stderr is a terminal."""
    return tqdm(total=total, unit=" rows", unit_scale=True, file=sys.stderr, leave=False,
                disable=disabled or not _isatty(sys.stderr), desc="cq")


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
@click.option("--time-unit", type=click.Choice(TIME_UNITS), default="ms", show_default=True,
              help="What one tick is (durations in the script are read in this unit).")
@click.option("--auto-delay", is_flag=True,
              help="Insert an ε delay into each loop that has none (paper 000 §3.1).")
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
