"""``Idempotency-Key``: a retried POST is not a second request.

A client that timed out cannot know whether the hub carried its request out; retrying an
upload would then merge every memory a second time (hits inflated). With an
``Idempotency-Key: <any string up to 200 characters>`` header, the first request with that key
is *claimed* before it runs and its answer stored when it ends; a repeat from the same account
within ``REPLAY_HOURS`` gets the stored answer back (header ``Idempotent-Replayed: true``) and
changes nothing. A repeat while the first still runs is answered 409 with ``Retry-After``; the
same key with a different request is answered 422. An answer of 500 or more is not kept: the
request did not happen, and a retry runs it.

Views opt in with ``IdempotentPost`` (before ``APIView`` in the bases). The claim is its own
committed transaction, so a concurrent repeat sees it.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from core.models import IdempotentRequest

HEADER = "Idempotency-Key"
REPLAY_HOURS = 24
KEY_MAX_CHARS = 200
# A claim older than this whose request never finished belongs to a process that died (a request
# runs for seconds; an upload batch well under a minute): the next repeat takes it over.
STALE_CLAIM = datetime.timedelta(minutes=10)
# Expired answers removed per claim: the table stays a day deep without a scheduled job.
_PRUNE_BATCH = 100


class IdempotencyInProgress(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_in_progress"
    default_detail = "A request with this Idempotency-Key is still running; retry in a moment for its answer."
    wait = 2  # DRF writes it as Retry-After


class IdempotencyKeyReused(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"
    default_detail = ("This Idempotency-Key was sent with a different request; use a new key for each "
                      "logical request.")


class IdempotencyKeyInvalid(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"
    field = HEADER


class _Replay(Exception):
    def __init__(self, response: Response):
        super().__init__("replay")
        self.response = response


def fingerprint(request: Request) -> str:
    """What a request was: its method, path and body. A multipart body is known by its length
    only (its boundary changes on every send, and hashing it would read a large upload into
    memory); a JSON body, which the hub keeps under 5 MiB, by its bytes."""
    django_request = request._request
    digest = hashlib.sha256(f"{request.method} {django_request.path}".encode())
    if request.content_type.startswith("multipart/"):
        digest.update(f"multipart {request.META.get('CONTENT_LENGTH', '')}".encode())
    else:
        digest.update(django_request.body)
    return digest.hexdigest()


def claim(*, owner_id: Any, key: str, print_: str) -> int | Response:
    """Claim ``key`` for a request (its row's id), or the stored answer of the request that
    claimed it first. Raises ``IdempotencyInProgress`` or ``IdempotencyKeyReused``."""
    now = timezone.now()
    expired = now - datetime.timedelta(hours=REPLAY_HOURS)
    IdempotentRequest.objects.filter(
        pk__in=IdempotentRequest.objects.filter(created_at__lt=expired).values("pk")[:_PRUNE_BATCH]).delete()
    with transaction.atomic():
        row = IdempotentRequest.objects.select_for_update().filter(owner_id=owner_id, key=key).first()
        if row is not None and row.created_at < expired:
            row.delete()  # past the replay window: the key starts a new request
            row = None
        if row is None:
            try:
                with transaction.atomic():
                    return IdempotentRequest.objects.create(owner_id=owner_id, key=key, fingerprint=print_).pk
            except IntegrityError:
                # Another process claimed the key between our read and our insert.
                raise IdempotencyInProgress() from None
        if row.fingerprint != print_:
            raise IdempotencyKeyReused()
        if row.status is None:
            if row.created_at >= now - STALE_CLAIM:
                raise IdempotencyInProgress()
            row.created_at = now
            row.save(update_fields=["created_at"])
            return row.pk
        return Response(row.response, status=row.status, headers={"Idempotent-Replayed": "true"})


def release(*, claim_id: int) -> None:
    """Free a claimed key: its request did not happen, and a retry runs it."""
    IdempotentRequest.objects.filter(pk=claim_id).delete()


def settle(*, claim_id: int, response: Response) -> None:
    """Keep the answer of a claimed request, or free the key when the request failed (≥ 500)."""
    if response.status_code >= 500:
        release(claim_id=claim_id)
        return
    # The answer as the client received it (UUIDs and dates as strings).
    data = json.loads(json.dumps(response.data, default=str)) if response.data is not None else None
    IdempotentRequest.objects.filter(pk=claim_id).update(status=response.status_code, response=data)


class IdempotentPost:
    """An ``APIView`` mixin: POSTs with an ``Idempotency-Key`` header run once per key."""

    _idempotency_claim: int | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]  # authentication and throttles first
        self._idempotency_claim = None
        key = request.headers.get(HEADER)
        if request.method != "POST" or key is None:
            return
        key = key.strip()
        if not key or len(key) > KEY_MAX_CHARS:
            raise IdempotencyKeyInvalid(f"{HEADER}: must be 1 to {KEY_MAX_CHARS} characters")
        outcome = claim(owner_id=request.user.pk, key=key, print_=fingerprint(request))
        if isinstance(outcome, Response):
            raise _Replay(outcome)
        self._idempotency_claim = outcome

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Replay):
            return exc.response
        try:
            return super().handle_exception(exc)  # type: ignore[misc]
        except BaseException:
            # An error no handler answers (a 500): the request did not happen; free the key.
            if self._idempotency_claim is not None:
                release(claim_id=self._idempotency_claim)
                self._idempotency_claim = None
            raise

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        if self._idempotency_claim is not None:
            settle(claim_id=self._idempotency_claim, response=response)
            self._idempotency_claim = None
        return response
