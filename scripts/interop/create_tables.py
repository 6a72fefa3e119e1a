"""Python Agno 3.1 creates its tables, so tests can compare agno-rs's DDL with the real thing.

Used by the DDL parity tests in crates/agno-db/tests (sqlite_ddl.rs, postgres.rs, mysql.rs), with
AGNO_PYTHON a Python that has `agno==3.1.*`, `sqlalchemy[asyncio]`, `psycopg` and `pymysql`
(`scripts/test --all` creates it).

    python create_tables.py sqlite   <file>                    <table-type>...
    python create_tables.py postgres <sqlalchemy-url> <schema> <table-type>...
    python create_tables.py mysql    <sqlalchemy-url> <db>     <table-type>...

Table types are Agno's: sessions, runs, memories, metrics, evals, knowledge, versions, schedules,
schedule_runs, jobs, approvals, components, service_accounts, .... Prints one JSON line: {"created": [table-type, ...]}.
"""
import json
import sys


def open_db(kind, args):
    if kind == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=args[0]), args[1:]
    if kind == "postgres":
        from agno.db.postgres import PostgresDb

        return PostgresDb(db_url=args[0], db_schema=args[1]), args[2:]
    from agno.db.mysql import MySQLDb

    return MySQLDb(db_url=args[0], db_schema=args[1]), args[2:]


def main():
    db, table_types = open_db(sys.argv[1], sys.argv[2:])
    created = []
    for table_type in table_types:
        if db._get_table(table_type=table_type, create_table_if_not_found=True) is None:
            raise SystemExit(f"Agno did not create a {table_type} table")
        created.append(table_type)
    print(json.dumps({"created": created}))


if __name__ == "__main__":
    main()
