"""The role the hub's connections run as (``core/spaces.py``): no login, owns nothing, may read
and write rows but never truncate, and so is bound by the row-level security policies that keep
spaces apart. Created once per PostgreSQL server (roles are server-wide), granted on this
database's tables, now and (default privileges) for every table a later migration creates.

On an external server the user of ``DATABASE_URL`` needs the right to create roles for this
step (``CREATEROLE``), or an administrator runs beforehand::

    CREATE ROLE ultron_app NOLOGIN;
    GRANT ultron_app TO <the hub's user>;
"""

from django.conf import settings
from django.db import migrations


def forward_sql() -> str:
    role = settings.ULTRON_DB_APP_ROLE
    return f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN
        BEGIN
            CREATE ROLE "{role}" NOLOGIN;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'the hub needs a database role "{role}" and % may not create roles: '
                'ask an administrator to run CREATE ROLE {role} NOLOGIN; GRANT {role} TO %;',
                current_user, current_user;
        END;
    END IF;
    IF NOT pg_has_role(current_user, '{role}', 'MEMBER') THEN
        EXECUTE format('GRANT "{role}" TO %I', current_user);
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO "{role}";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}";
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO "{role}";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO "{role}";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO "{role}";
"""


def backward_sql() -> str:
    role = settings.ULTRON_DB_APP_ROLE
    return f"""
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM "{role}";
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM "{role}";
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM "{role}";
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM "{role}";
REVOKE USAGE ON SCHEMA public FROM "{role}";
"""


class Migration(migrations.Migration):
    dependencies = [("core", "0001_initial")]

    operations = [migrations.RunSQL(forward_sql(), backward_sql())]
