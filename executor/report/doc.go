// Package report holds what both controller protocols use to publish a
// step's outputs through the API server: PodReporter (the pod's outputs
// annotation, our controller's channel and Argo's fallback on 403), the
// budget checks that name the output that does not fit, the retry policy of
// report calls, and the RBAC hint appended to a refusal.
package report
