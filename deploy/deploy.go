// Package deploy holds the manifests slotplane needs on every cluster besides its CRDs, so
// the local platform applies exactly what a real cluster gets.
package deploy

import _ "embed"

// PriorityClasses is deploy/priorityclasses.yaml: the ghost and batch PriorityClasses.
//
//go:embed priorityclasses.yaml
var PriorityClasses []byte

// SchedulerConfig is deploy/kube-scheduler-config.yaml: the KubeSchedulerConfiguration with
// the slot-scheduler profile and slotplane's extender.
//
//go:embed kube-scheduler-config.yaml
var SchedulerConfig []byte

// AdmissionPolicies is deploy/admission-policies.yaml: the ValidatingAdmissionPolicies that
// let a BatchJob or a Scheduling name only its maker as its user, unless the maker may
// submit for others, keep a spec its user's, and keep slotplane's own labels and
// annotations slotplane's.
//
//go:embed admission-policies.yaml
var AdmissionPolicies []byte
