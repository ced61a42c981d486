// Package deploy holds the example deployment of logwindow_exporter: Kubernetes manifests
// (k8s/, overlays/), a Grafana dashboard and Prometheus alerting rules. It is a module of
// its own, so that the Kubernetes, kustomize and prometheus-operator modules its tests use
// stay out of the exporter's go.mod. Its tests check the files statically, render the
// manifests with kustomize, and run the pod's programs as local processes.
package deploy
