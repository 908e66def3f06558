//! fief: render a tenants repo and reconcile it into Kubernetes, one tenant at a time.
