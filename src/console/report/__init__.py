"""Machine-readable sweep reports: JSON (schema-validated), JUnit XML, Prometheus textfile."""

from console.report.formats import (
    NodeReport,
    SweepReport,
    build_report,
    dump_schema,
    junit_xml,
    prometheus_textfile,
    report_json_schema,
    write_json,
)

__all__ = [
    "NodeReport",
    "SweepReport",
    "build_report",
    "dump_schema",
    "junit_xml",
    "prometheus_textfile",
    "report_json_schema",
    "write_json",
]
