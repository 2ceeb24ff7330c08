"""A minimal Django app for tests/querycache/test_orm_django.py: models (models.py), two views
with their URLs (urls.py) and a database router that sends every query to the database alias
the running workload is for (ALIAS), so one workload runs unchanged against MariaDB directly
and through each proxy."""
import contextvars

# The DATABASES alias the current workload uses ("default" is MariaDB directly).
ALIAS = contextvars.ContextVar("django_app_alias", default="default")


class AliasRouter:
    """Reads and writes of every model go to ALIAS's database."""

    def db_for_read(self, model, **hints):
        """The current workload's alias."""
        return ALIAS.get()

    def db_for_write(self, model, **hints):
        """The current workload's alias."""
        return ALIAS.get()

    def allow_relation(self, obj1, obj2, **hints):
        """Objects of one workload live in one database."""
        return True
