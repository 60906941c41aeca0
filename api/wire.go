package api

import "slotplane/apitypes"

// The API's wire types live in apitypes, so that clients need not import the server; these
// names keep the server's code and its callers reading as before.
type (
	User               = apitypes.User
	TokenScope         = apitypes.TokenScope
	Error              = apitypes.Error
	FieldError         = apitypes.FieldError
	EventType          = apitypes.EventType
	Event              = apitypes.Event
	Job                = apitypes.Job
	JobList            = apitypes.JobList
	JobRequest         = apitypes.JobRequest
	TestBed            = apitypes.TestBed
	TestBedStatus      = apitypes.TestBedStatus
	SlotSlice          = apitypes.SlotSlice
	Scheduling         = apitypes.Scheduling
	SchedulingList     = apitypes.SchedulingList
	SchedulingRequest  = apitypes.SchedulingRequest
	SchedulingPatch    = apitypes.SchedulingPatch
	Resources          = apitypes.Resources
	QueueTree          = apitypes.QueueTree
	Queue              = apitypes.Queue
	QueuedJob          = apitypes.QueuedJob
	YARNScheduler      = apitypes.YARNScheduler
	MoveRequest        = apitypes.MoveRequest
	MoveResult         = apitypes.MoveResult
	KillResult         = apitypes.KillResult
	SchedulerDataPatch = apitypes.SchedulerDataPatch
)

// The codes, event types, kinds and subprotocol of the wire.
const (
	CodeBadRequest      = apitypes.CodeBadRequest
	CodeInvalid         = apitypes.CodeInvalid
	CodeUnauthorized    = apitypes.CodeUnauthorized
	CodeForbidden       = apitypes.CodeForbidden
	CodeNotFound        = apitypes.CodeNotFound
	CodeConflict        = apitypes.CodeConflict
	CodeTooLarge        = apitypes.CodeTooLarge
	CodeTooManyRequests = apitypes.CodeTooManyRequests
	CodeUnavailable     = apitypes.CodeUnavailable
	CodeInternal        = apitypes.CodeInternal

	Added    = apitypes.Added
	Modified = apitypes.Modified
	Deleted  = apitypes.Deleted
	Resync   = apitypes.Resync

	KindScheduling = apitypes.KindScheduling
	KindBatchJob   = apitypes.KindBatchJob
	KindTestBed    = apitypes.KindTestBed
	KindSlotSlice  = apitypes.KindSlotSlice

	Subprotocol = apitypes.Subprotocol
)
