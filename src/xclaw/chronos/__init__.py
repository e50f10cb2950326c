"""Chronos (seed 003 ch. 11): scheduled and event-driven unattended runs.

``ChronosService`` ties the parts together for ``xclaw serve`` and ``xclaw chronos run``:
``schedule`` (cron via cronsim, time zones), ``engine`` (drift-free firing, overlap guard,
missed-fire policy, graceful stop), ``store`` (last fire per job, run history, webhook
deliveries; SQLite), ``runner`` (each fire a durable agent session in CHRONOS MODE),
``webhooks`` (``POST /hooks/<name>``), ``notify`` (targets, retries, dead letters) and
``subscriptions`` (events that start a notification or a run).
"""
