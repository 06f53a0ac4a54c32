"""The portable export: memories, contributions, clusters (with their members) and skills
(with their versions) as JSON lines, for moving a hub's knowledge to another hub or keeping
it in a form that outlives a PostgreSQL version (docs/operations.md#export-and-import).

``codec`` holds the format and the checks of each line, ``export`` writes a file, ``load``
reads one (``store`` stores its lines, idempotently, through the apps' import services:
``memories.services.portable`` and ``clusters.services.portable`` write every row). Clusters are
in it, so it lives in the project package, above every app."""

from ultron_site.portable.codec import FORMAT, VERSION
from ultron_site.portable.export import export_write
from ultron_site.portable.load import ImportFailed, ImportReport, import_lines

__all__ = ["FORMAT", "VERSION", "ImportFailed", "ImportReport", "export_write", "import_lines"]
