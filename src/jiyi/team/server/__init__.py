"""The team server (docs/team-protocol.md): a Starlette app over one PostgreSQL database.

``app`` holds the routes and ``app_from_env`` (the uvicorn factory); ``limits`` checks a request
before a route sees it (token, rate, body size); ``openapi`` describes the API.
"""
