"""Events of the memory service, for the apps above it.

The memory service knows nothing of the apps built on it (clusters, ingestion); when one of
them must follow what happened to a memory, it connects a receiver to one of these signals in
its ``AppConfig.ready()``. Each signal is sent explicitly by the service function that did the
work — never from a model's ``save()`` — with ``send()``, not ``send_robust()``: receivers run
synchronously inside the sender's transaction, so a receiver that fails rolls the whole change
back instead of leaving the two apps out of step.

Every signal is sent with ``sender=Memory`` (the model class; ``calibration_requested``:
``EmbeddingCalibration``) and keyword arguments only.
"""

from __future__ import annotations

from django.dispatch import Signal

#: A new active memory was stored (not a merge into an existing one). Args: ``memory_id``, and
#: ``memory``: the stored row itself (with its embedding), so receivers need not read it again;
#: ``locks_held``: the upload's first statement already took the locks registered with
#: ``memories.services.upload_lock_register`` (False, or absent, when another path sends it).
memory_added = Signal()

#: An active memory's embedding changed (merge rewrote its body, a curator edited it) or an
#: archived memory became active again. Args: ``memory_id``.
memory_changed = Signal()

#: A memory leaves the active set: archived, merged away, or about to be deleted (sent before
#: the row goes, inside the same transaction). Args: ``memory_id``.
memory_removed = Signal()

#: A memory was superseded by a newer one (it has left the active set: ``memory_removed`` was
#: sent too). Args: ``memory_id`` (the old one), ``by`` (the new one's id).
memory_superseded = Signal()

#: Many memories were archived in one statement (the tier rebalance). No args: receivers look
#: for rows that are no longer active.
memories_archived = Signal()

#: The embedding column changed dimension (a new embedding model). Args: ``dimensions``.
embedding_dimensions_changed = Signal()

#: Every memory was re-embedded with a new model (inside the re-embedding transaction).
memories_reembedded = Signal()

#: ``manage.py calibrate`` is fitting the thresholds of the configured embedding space. Sent with
#: ``sender=EmbeddingCalibration`` and ``embed`` (texts → L2-normalised vectors, the configured
#: embedder with a cache); each receiver returns a list of ``memories.calibration.Fitted`` for
#: the values whose rule lives in its app (the clusters' join and merge, the segmenter's shift).
calibration_requested = Signal()
