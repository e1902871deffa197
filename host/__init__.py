"""The host: what every app builds on (errors, live push, outbound calls, storage,
start-up, health). It imports no app; the apps import it."""
