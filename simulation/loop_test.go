package simulation

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// script is a model that writes down what the loop asks of it. Each job, once it arrives,
// runs for its Runtime and then ends; events are further times the model names itself.
type script struct {
	jobs   []Job
	log    []string
	endsAt map[int]time.Duration
	events []time.Duration
	failAt time.Duration
}

func newScript(jobs []Job, events ...time.Duration) *script {
	return &script{jobs: jobs, endsAt: map[int]time.Duration{}, events: events, failAt: -1}
}

func (s *script) note(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

func (s *script) End(now time.Duration) {
	for i := range s.jobs {
		if at, ok := s.endsAt[i]; ok && at == now {
			s.note("%v end %s", now, s.jobs[i].Name)
			delete(s.endsAt, i)
		}
	}
}

func (s *script) Start(now time.Duration) { s.note("%v start", now) }

func (s *script) Arrive(i int, now time.Duration) {
	s.note("%v arrive %s", now, s.jobs[i].Name)
	s.endsAt[i] = now + s.jobs[i].Runtime
}

func (s *script) Decide(now time.Duration) error {
	s.note("%v decide", now)
	if now == s.failAt {
		return errors.New("no decision")
	}
	return nil
}

func (s *script) Next(now time.Duration) (time.Duration, bool) {
	at, ok := time.Duration(0), false
	consider := func(t time.Duration) {
		if t >= now && (!ok || t < at) {
			at, ok = t, true
		}
	}
	for _, t := range s.endsAt {
		consider(t)
	}
	for _, t := range s.events {
		if t > now {
			consider(t)
		}
	}
	return at, ok
}

func (s *script) Elapse(from, to time.Duration) { s.note("elapse %v-%v", from, to) }

// The jobs arrive in submission order, by time and then as given; at each instant what ends
// goes first, then what starts, then the arrivals, then the decision. A run that ends at
// the instant it arrives makes the loop apply that instant again.
func TestRun_AppliesEachInstantInOrder(t *testing.T) {
	jobs := []Job{
		{Name: "late", Submit: 2 * time.Second, Runtime: time.Second},
		{Name: "first", Submit: 0, Runtime: 2 * time.Second},
		{Name: "second", Submit: 0, Runtime: 0},
	}
	s := newScript(jobs)
	stop, err := Run(s, jobs, Clock{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0s start", "0s arrive first", "0s arrive second", "0s decide", "elapse 0s-0s",
		"0s end second", "0s start", "0s decide", "elapse 0s-2s",
		"2s end first", "2s start", "2s arrive late", "2s decide", "elapse 2s-3s",
		"3s end late", "3s start", "3s decide",
	}
	if diff := cmp.Diff(want, s.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if want := (Stop{Why: Idle, At: 3 * time.Second, Events: 4}); stop != want {
		t.Errorf("stop = %+v, want %+v", stop, want)
	}
}

// Without jobs the loop still applies the start, so a model may act at time 0.
func TestRun_NoJobs(t *testing.T) {
	s := newScript(nil)
	stop, err := Run(s, nil, Clock{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0s start", "0s decide"}, s.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if stop.Why != Idle || stop.At != 0 {
		t.Errorf("stop = %+v, want idle at 0", stop)
	}
}

// An event at the limit happens; the next one, past it, does not, and the model hears that
// the time up to the limit elapsed.
func TestRun_StopsAtTheLimit(t *testing.T) {
	jobs := []Job{{Name: "a", Submit: 0, Runtime: time.Hour}}
	s := newScript(jobs, time.Minute)
	stop, err := Run(s, jobs, Clock{Limit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0s start", "0s arrive a", "0s decide", "elapse 0s-1m0s", "1m0s start", "1m0s decide", "elapse 1m0s-1m0s"}
	if diff := cmp.Diff(want, s.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if want := (Stop{Why: AtLimit, At: time.Minute, Events: 2}); stop != want {
		t.Errorf("stop = %+v, want %+v", stop, want)
	}
}

// A model that always has another event stops once the loop applied more instants than the
// bound.
func TestRun_StopsAfterTheBoundOnEvents(t *testing.T) {
	var events []time.Duration
	for i := range 100 {
		events = append(events, time.Duration(i+1)*time.Second)
	}
	s := newScript(nil, events...)
	stop, err := Run(s, nil, Clock{MaxEvents: 5})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stop{Why: TooManyEvents, At: 5 * time.Second, Events: 6}); stop != want {
		t.Errorf("stop = %+v, want %+v", stop, want)
	}
}

// A decision that fails ends the run with its error.
func TestRun_PassesOnTheModelsError(t *testing.T) {
	jobs := []Job{{Name: "a", Submit: time.Second, Runtime: time.Second}}
	s := newScript(jobs)
	s.failAt = time.Second
	stop, err := Run(s, jobs, Clock{})
	if err == nil || err.Error() != "no decision" {
		t.Fatalf("err = %v, want the model's", err)
	}
	if stop.At != time.Second {
		t.Errorf("stop = %+v, want at 1s", stop)
	}
}
