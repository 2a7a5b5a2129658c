"""One local SparkSession for all Spark tests (starting one takes seconds).

pyspark is a test dependency (pyproject's ``test`` extra): if it is missing these tests fail, they
do not skip.
"""

import pytest
from pyspark.sql import SparkSession

from cq_py.spark.files import start_session


@pytest.fixture(scope="session")
def spark():
    # start_session: the workers import the installed cq even when pytest runs in a source checkout.
    session = start_session(
        SparkSession.builder.master("local[2]")
        .appName("cq-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", "1g")
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
