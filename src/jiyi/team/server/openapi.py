"""The OpenAPI 3.1 description the team server serves at ``/openapi.json`` (written by hand, from
docs/team-protocol.md; a test checks that it names every route the app has)."""

from __future__ import annotations

from typing import Any

from ... import __version__


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERRORS = {
    "400": _json(_ref("Error"), "E_INVALID_ARGUMENT"),
    "401": _json(_ref("Error"), "E_UNAUTHORIZED: no, unknown or revoked token"),
    "403": _json(_ref("Error"), "E_FORBIDDEN: a record of another team"),
    "429": {
        "description": "E_UNAVAILABLE: rate limit of the token, or of failed authentications from the "
        "client's address (per server process)",
        "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds"}},
        "content": {"application/json": {"schema": _ref("Error")}},
    },
    "503": _json(_ref("Error"), "E_UNAVAILABLE: the database cannot be used"),
}


# The reads team.server.app.READ_ROUTES sends to a read replica say so (a test holds the two together).
_REPLICA = (
    "Read from the read replica when the server has one (`jiyi team serve --read-dsn`): a change shows "
    "here once the replica has replayed it (pulls see a prefix of the changes, never skip one)."
)


def _query(name: str, kind: str, description: str, *, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": {"type": kind}, "description": description}


def _paged(summary: str, cursor: str, item: dict[str, Any]) -> dict[str, Any]:
    """A GET read by cursor: ``records`` of ``item``, the next ``cursor`` and whether ``more`` wait."""
    return {
        "get": {
            "summary": summary,
            "description": _REPLICA,
            "parameters": [
                _query("cursor", "integer", cursor),
                _query("limit", "integer", "1..1000, default 200"),
            ],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "properties": {
                            "records": {"type": "array", "items": item},
                            "cursor": {"type": "integer"},
                            "more": {"type": "boolean"},
                        },
                    }
                ),
                **_ERRORS,
            },
        }
    }


def document() -> dict[str, Any]:
    line = {
        "type": "object",
        "description": "One line of `jiyi export` (transfer.record_to_json): fields, fix, reproduction, "
        "signatures, symbols, revisions, marks.",
        "required": ["jiyi_export", "hex", "title", "type", "scope", "what", "why", "where", "learned"],
        "properties": {
            "jiyi_export": {"const": 1},
            "hex": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "sources": {"type": "integer", "description": "the pushing member's own count (absolute)"},
            "used_success": {"type": "integer", "description": "the pushing member's own count (absolute)"},
        },
        "additionalProperties": True,
    }
    pulled = {
        "allOf": [
            _ref("Record"),
            {
                "type": "object",
                "properties": {
                    "seq": {"type": "integer"},
                    "sources": {"type": "integer", "description": "sum over the team's members"},
                    "used_success": {"type": "integer", "description": "sum over the team's members"},
                    "verification": {"oneOf": [_ref("Verification"), {"type": "null"}]},
                },
            },
        ]
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "jiyi team memory",
            "version": __version__,
            "description": "The shared memory of one team (docs/team-protocol.md). Every request but "
            "/v1/health and /openapi.json needs `Authorization: Bearer <token>`; the token's team scopes it.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string", "examples": ["E_UNAUTHORIZED"]},
                        "message": {"type": "string", "examples": ["团队记忆拒绝访问"]},
                        "message_en": {"type": "string", "examples": ["team memory refused access"]},
                        "field": {"type": "string", "description": "E_INVALID_ARGUMENT: the field at fault"},
                        "reason": {
                            "type": "string",
                            "description": "E_INVALID_ARGUMENT: what is wrong with the field; E_FORBIDDEN, "
                            "when a token's role may not do it: why (a client shows it on a second line)",
                        },
                        "reason_en": {"type": "string", "description": "`reason` in English"},
                    },
                },
                "Record": line,
                "Pulled": pulled,
                "Verification": {
                    "type": "object",
                    "properties": {
                        "how": {"type": "string"},
                        "date": {"type": "string"},
                        "environment": {"type": "string"},
                        "passed": {"type": "integer"},
                        "tries": {"type": "integer"},
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/health": {
                "get": {
                    "summary": "Is the server up (no token)",
                    "security": [],
                    "responses": {"200": _json({"type": "object", "properties": {"ok": {"const": True}}})},
                }
            },
            "/v1/push": {
                "post": {
                    "summary": "Store this machine's records (at most 100, at most 1 MiB); the server redacts "
                    "their texts, fix, reproduction and revisions before it stores them",
                    "description": "Only a record's author (the member whose push first stored it) or an "
                    "operator revises it: another member's line is merged for that member's evidence only, and "
                    "its hex is answered in `refused` when it brought a higher revision, revisions or marks the "
                    "record lacks, or a raised origin (E_FORBIDDEN for that record alone; nothing of it stored).",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["records"],
                                    "properties": {
                                        "machine": {"type": "string"},
                                        "records": {"type": "array", "maxItems": 100, "items": _ref("Record")},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "accepted": {"type": "array", "items": {"type": "string"}},
                                    "unchanged": {"type": "array", "items": {"type": "string"}},
                                    "refused": {"type": "array", "items": {"type": "string"}},
                                },
                            }
                        ),
                        "413": _json(_ref("Error"), "E_INVALID_ARGUMENT: body larger than the limit"),
                        **_ERRORS,
                    },
                }
            },
            "/v1/changes": _paged(
                "The team's records changed since a cursor, in change order",
                "the last `cursor` received (0 at first)",
                _ref("Pulled"),
            ),
            "/v1/search": {
                "get": {
                    "summary": "Rank the team's records for a query (docs/spec.md §4 signals)",
                    "description": _REPLICA,
                    "parameters": [
                        _query("q", "string", "1..2000 characters", required=True),
                        _query("limit", "integer", "1..50, default 5"),
                        _query("project", "string", "project key: its project-scope records count too"),
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "hits": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "id": {"type": "string", "pattern": "^rr_[0-9a-f]{32}$"},
                                                "title": {"type": "string"},
                                                "score": {"type": "number"},
                                                "origin": {"type": "string"},
                                                "project": {"type": "string"},
                                                "updated": {"type": "string"},
                                            },
                                        },
                                    }
                                },
                            }
                        ),
                        **_ERRORS,
                    },
                }
            },
            "/v1/forget": {
                "post": {
                    "summary": "Take records out of the team: forgotten, or purged (text, revisions, evidence and "
                    "replay runs erased); pulls learn of it from /v1/forgotten. Only the member whose push first "
                    "stored a record may (any member for a record stored before the server kept authors), "
                    "or an operator's token, any record",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["records"],
                                    "properties": {
                                        "records": {
                                            "type": "array",
                                            "maxItems": 100,
                                            "items": {
                                                "type": "object",
                                                "required": ["hex"],
                                                "properties": {
                                                    "hex": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                                                    "purge": {"type": "boolean", "default": False},
                                                },
                                            },
                                        }
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "description": "every hex asked for, in one of the lists; refused (E_FORBIDDEN, "
                                "per record): another member pushed the record first, and nothing changed",
                                "properties": {
                                    "forgotten": {"type": "array", "items": {"type": "string"}},
                                    "unknown": {"type": "array", "items": {"type": "string"}},
                                    "refused": {"type": "array", "items": {"type": "string"}},
                                },
                            }
                        ),
                        **_ERRORS,
                    },
                }
            },
            "/v1/forgotten": _paged(
                "The team's records forgotten or purged since a cursor, in change order",
                "the last `cursor` received from this endpoint (0 at first)",
                {
                    "type": "object",
                    "properties": {
                        "hex": {"type": "string"},
                        "purged": {"type": "boolean"},
                        "at": {"type": "string"},
                        "seq": {"type": "integer"},
                    },
                },
            ),
            "/v1/verify/candidates": {
                "get": {
                    "summary": "Records with a fix and a reproduction and no replay yet (runner and operator tokens)",
                    "description": _REPLICA,
                    "parameters": [_query("limit", "integer", "1..200, default 20")],
                    "responses": {
                        "200": _json(
                            {"type": "object", "properties": {"records": {"type": "array", "items": _ref("Pulled")}}}
                        ),
                        **_ERRORS,
                    },
                }
            },
            "/v1/verify/{hex}": {
                "get": {
                    "summary": "Every replay run of a record, oldest first (their output stays on the server)",
                    "parameters": [
                        {"name": "hex", "in": "path", "required": True, "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "runs": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "at": {"type": "string"},
                                                "how": {"type": "string"},
                                                "environment": {"type": "string"},
                                                "passed": {"type": "boolean"},
                                                "runner": {
                                                    "type": ["string", "null"],
                                                    "description": "the member name of the token that reported "
                                                    "it (null: reported before runners were named)",
                                                },
                                            },
                                        },
                                    }
                                },
                            }
                        ),
                        "404": _json(_ref("Error"), "E_NOT_FOUND"),
                        **_ERRORS,
                    },
                },
                "post": {
                    "summary": "Report one replay run of a record (a runner's or an operator's token only; a "
                    "member's is refused, 403, and nothing is stored). The run keeps the token's member name as "
                    "its runner; how, environment and detail are redacted before they are stored",
                    "parameters": [
                        {"name": "hex", "in": "path", "required": True, "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["passed"],
                                    "properties": {
                                        "passed": {"type": "boolean"},
                                        "how": {"type": "string", "default": "replay"},
                                        "environment": {"type": "string", "examples": ["os=linux,arch=x86_64"]},
                                        "detail": {"type": "string"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json({"type": "object", "properties": {"verification": _ref("Verification")}}),
                        "403": _json(_ref("Error"), "E_FORBIDDEN: a record of another team, or a token not a runner's"),
                        "404": _json(_ref("Error"), "E_NOT_FOUND"),
                        **{k: v for k, v in _ERRORS.items() if k != "403"},
                    },
                },
            },
            "/openapi.json": {
                "get": {"summary": "This document", "security": [], "responses": {"200": {"description": "OK"}}}
            },
        },
    }
