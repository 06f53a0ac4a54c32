"""The centroid index moves to ``direction``, a copy of the centroid that a trigger refreshes
only when the centroid has drifted from it by more than 0.001 in cosine distance
(clusters.models.DIRECTION_DRIFT) and clears for an empty cluster: a memory joining a cluster
then mostly rewrites the cluster's row in place (HOT; fillfactor 50 leaves room on the page)
instead of adding an entry to the HNSW graph every time. Existing clusters get their direction
before the index is built. Idempotent (function replaced, trigger dropped first)."""

import pgvector.django.indexes
import pgvector.django.vector
from django.conf import settings
from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION clusters_direction_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.member_count <= 0 THEN
        NEW.direction := NULL;
    ELSIF NEW.direction IS NULL OR NOT ((NEW.direction <=> NEW.centroid) <= 0.001) THEN
        NEW.direction := NEW.centroid;
    END IF;
    RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS clusters_direction ON clusters_knowledgecluster;
CREATE TRIGGER clusters_direction BEFORE INSERT OR UPDATE ON clusters_knowledgecluster
    FOR EACH ROW EXECUTE FUNCTION clusters_direction_follow();

ALTER TABLE clusters_knowledgecluster SET (fillfactor = 50);
UPDATE clusters_knowledgecluster SET direction = NULL;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS clusters_direction ON clusters_knowledgecluster;
DROP FUNCTION IF EXISTS clusters_direction_follow();
ALTER TABLE clusters_knowledgecluster RESET (fillfactor);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('clusters', '0002_permissions'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='knowledgecluster',
            name='cluster_centroid_hnsw',
        ),
        migrations.AddField(
            model_name='knowledgecluster',
            name='direction',
            field=pgvector.django.vector.VectorField(blank=True, dimensions=settings.ULTRON_EMBEDDING_DIMENSIONS,
                                                     editable=False, null=True),
        ),
        # (The UPDATE fires the new trigger on every cluster: it sets each one's direction.)
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.AddIndex(
            model_name='knowledgecluster',
            index=pgvector.django.indexes.HnswIndex(ef_construction=64, fields=['direction'], m=16,
                                                    name='cluster_direction_hnsw', opclasses=['vector_cosine_ops']),
        ),
    ]
