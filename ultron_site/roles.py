"""The two roles people have in the hub's admin site, as Django groups of permissions.

*Curators* look after the memory: view and edit memories, review merges, crystallize clusters,
publish skills, and read where memories came from (ingest jobs, sessions, segments; not the raw
archives). *Admins* do all of that and run the hub: upload sessions, download raw
archives, manage agents and their tokens, retry parked work, run the pipeline, delete
memories. The groups are created by a data migration (``ultron_site.0004_roles``) and kept in
step by it; ``manage.py create_user NAME --role curator|admin`` puts a person in one.
"""

from __future__ import annotations

CURATORS = "Curators"
ADMINS = "Admins"
ROLE_GROUPS = {"curator": CURATORS, "admin": ADMINS}

# (app label, model, codename) — codenames not starting with a Django default verb are the
# custom permissions declared in the models' Meta.
CURATOR_PERMISSIONS: list[tuple[str, str, str]] = [
    ("memories", "memory", "view_memory"),
    ("memories", "memory", "change_memory"),
    ("memories", "memory", "review_merges"),
    ("memories", "memorycontribution", "view_memorycontribution"),
    ("memories", "mergecandidate", "view_mergecandidate"),
    ("memories", "mergecandidate", "change_mergecandidate"),
    ("memories", "memoryedit", "view_memoryedit"),
    ("clusters", "knowledgecluster", "view_knowledgecluster"),
    ("clusters", "knowledgecluster", "crystallize_cluster"),
    ("clusters", "clustermember", "view_clustermember"),
    ("clusters", "skill", "view_skill"),
    ("clusters", "skill", "publish_skill"),
    ("clusters", "skillversion", "view_skillversion"),
    ("ingestion", "ingestjob", "view_ingestjob"),
    ("ingestion", "sessionrecord", "view_sessionrecord"),
    ("ingestion", "tasksegment", "view_tasksegment"),
]
ADMIN_PERMISSIONS: list[tuple[str, str, str]] = [
    *CURATOR_PERMISSIONS,
    ("memories", "memory", "delete_memory"),
    ("memories", "embeddingspace", "view_embeddingspace"),
    ("ingestion", "sessionrecord", "upload_sessions"),
    ("ingestion", "sessionrecord", "retry_work"),
    # Raw archives are for admins only: with ULTRON_RAW_ARCHIVE_REDACT off they hold secrets in clear.
    ("ingestion", "rawupload", "view_rawupload"),
    ("ingestion", "rawupload", "download_rawupload"),
    ("agents", "agent", "view_agent"),
    ("agents", "agent", "add_agent"),
    ("agents", "agent", "change_agent"),
    ("agents", "apitoken", "view_apitoken"),
    ("agents", "apitoken", "add_apitoken"),
    ("agents", "apitoken", "change_apitoken"),
    ("ultron_site", "steprun", "view_steprun"),
    ("ultron_site", "steprun", "run_pipeline"),
]
ROLE_PERMISSIONS = {CURATORS: CURATOR_PERMISSIONS, ADMINS: ADMIN_PERMISSIONS}


def groups_sync(apps) -> None:
    """Create or update both groups with exactly their permissions (``apps``: a migration's
    app registry or ``django.apps.apps``). Permissions are created here if the post-migrate
    step has not made them yet (it runs after all migrations)."""
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    content_type_model = apps.get_model("contenttypes", "ContentType")
    for group_name, wanted in ROLE_PERMISSIONS.items():
        group, _ = group_model.objects.get_or_create(name=group_name)
        permissions = []
        for app_label, model, codename in wanted:
            content_type, _ = content_type_model.objects.get_or_create(app_label=app_label, model=model)
            permission, _ = permission_model.objects.get_or_create(
                content_type=content_type, codename=codename,
                defaults={"name": _permission_name(apps.get_model(app_label, model), codename)},
            )
            permissions.append(permission)
        group.permissions.set(permissions)


def _permission_name(model, codename: str) -> str:
    """The name Django itself would give the permission (its Meta entry, or "Can view ...")."""
    for declared, name in model._meta.permissions:
        if declared == codename:
            return name
    verb = codename.split("_", 1)[0]
    return f"Can {verb} {model._meta.verbose_name_raw}"
