"""One problem reported six times in different words ends up in one cluster that can
crystallize, whatever the arrival order (the real embedding model, the upload funnel and the
pipeline's repair, as a hub a day later would run them)."""

from __future__ import annotations

import datetime
import itertools
import random

import pytest

from clusters.models import KnowledgeCluster
from clusters.services import clusters_repair
from memories.services import memory_upload

pytestmark = pytest.mark.django_db

# An ORM's migration tool producing empty migrations, worded as six different agents would.
EMPTY_MIGRATIONS = [
    ("makemigrations says 'No changes detected' although I added a field to the model.",
     "Django 5, app created with startapp", "The app was missing from INSTALLED_APPS; after adding it the migration appeared."),
    ("Django generated an empty migration file for my new model.",
     "models split into a models/ package", "models/__init__.py did not import the new module, so Django never saw the model."),
    ("python manage.py makemigrations produced nothing for the orders app.",
     "", "Register 'orders.apps.OrdersConfig' in INSTALLED_APPS and run makemigrations orders."),
    ("New Django model ignored by makemigrations: no migration created.",
     "monorepo, several Django apps", "The app had no migrations/ folder with __init__.py; create it, then makemigrations picks the model up."),
    ("Django migrations come out empty after I moved models into their own files.",
     "refactor of a large models.py", "Import every model in the package's __init__.py so the app registry loads them."),
    ("makemigrations keeps detecting no changes for a model field I renamed.",
     "Django, custom app label", "The model's Meta.app_label pointed at another app; fix the label so the change is detected."),
]
UNRELATED = [
    ("Redis connection reset by peer when the pool is exhausted.", "", "Size the pool to the worker count."),
    ("Always answer this user in British English.", "", ""),
    ("kubectl apply fails with 'field is immutable' when changing a Deployment's selector.", "", "Delete and recreate it."),
]


def _clusters_of(ids: list) -> list[int]:
    from clusters.models import ClusterMember

    return sorted(ClusterMember.objects.filter(memory_id__in=ids).values_list("cluster_id", flat=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_six_reports_of_one_problem_gather_in_one_cluster_after_repair(seed, settings):
    order = [("topic", row) for row in EMPTY_MIGRATIONS] + [("other", row) for row in UNRELATED]
    random.Random(seed).shuffle(order)
    topic_ids = []
    other_ids = []
    for kind, (content, context, resolution) in order:
        result = memory_upload(content=content, context=context, resolution=resolution)
        (topic_ids if kind == "topic" else other_ids).append(result.memory.pk)
    assert len(set(topic_ids)) == 6, "the six reports are distinct memories, not merged"

    KnowledgeCluster.objects.update(created_at=datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=2))
    for _ in range(5):
        done = clusters_repair()
        if not (done["merged"] or done["moved"]):  # suggestions are refreshed on every pass
            break

    clusters = _clusters_of(topic_ids)
    biggest = max(len(list(group)) for _, group in itertools.groupby(clusters))
    assert biggest >= settings.ULTRON_CRYSTALLIZATION_THRESHOLD
    assert not set(_clusters_of(other_ids)) & set(clusters), "unrelated memories stay out of the topic's cluster"
