package extender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
)

// What a call's body is read for. kube-scheduler sends the whole pod (a Spark executor is
// about 4 KB of JSON) and, with nodeCacheCapable, the names of every candidate node (1,000
// names are 13 KB). Every decision is made on the cluster's copy of the pod (LivePod), so
// of the pod only its identity is kept; of the nodes, only their names.
//
// The body is read by callReader, not by encoding/json. Decoding a /filter call into
// extenderv1.ExtenderArgs would be 84% of its cost; encoding/json into these narrow types
// still scans the body twice and makes a string per node name, about 160 µs of a 16 KB call,
// more than the whole call may take. callReader checks the whole body in one pass and takes
// the names as substrings of one copy of it. It keeps encoding/json's meaning of what it
// reads (key names matched as encoding/json matches them to these fields, strings with
// escapes decoded by encoding/json itself), and refuses what a scheduler never sends:
// a key it reads given twice, anything after the object. FuzzCallReader holds it to that.

// callPod is the pod a call names.
type callPod struct {
	Namespace, Name string
	UID             types.UID
}

func (p *callPod) key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// String is the pod's namespace/name for logs, "" when the call names none.
func (p *callPod) String() string {
	if p == nil {
		return ""
	}
	return p.key().String()
}

// filterCall is what /filter reads of extenderv1.ExtenderArgs: the pod, and the candidate
// nodes' names, given as NodeNames by a nodeCacheCapable scheduler and as whole Nodes
// otherwise.
type filterCall struct {
	Pod *callPod
	// NodeNames and Nodes are nil when the call has no such field (or null).
	NodeNames, Nodes []string
}

// candidates are the node names of the call, NodeNames first as the scheduler means them.
func (c *filterCall) candidates() []string {
	switch {
	case c.NodeNames != nil:
		return c.NodeNames
	case c.Nodes != nil:
		return c.Nodes
	}
	return []string{}
}

// preemptCall is what /preempt reads of extenderv1.ExtenderPreemptionArgs: the pod. The
// victims the scheduler proposes are not read: the pod's slot decides the node, and the
// slot's ghost is the victim.
type preemptCall struct {
	Pod *callPod
}

// bindCall is extenderv1.ExtenderBindingArgs: the pod, by namespace, name and UID, and the
// node the scheduler chose for it.
type bindCall struct {
	Pod  callPod
	Node string
}

// bodyBuffers keep the buffers bodies are read into; a body is then copied once, into
// the string that the names read from it share.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads a call's body, at most maxBody bytes of it.
func readBody(w http.ResponseWriter, r *http.Request) (string, error) {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer bodyBuffers.Put(buf)
	buf.Reset()
	if n := r.ContentLength; n > 0 && n <= maxBody {
		buf.Grow(int(n) + bytes.MinRead) // read without growing, and see the end
	}
	if _, err := buf.ReadFrom(body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return "", fmt.Errorf("request body over %d bytes", maxBody)
		}
		return "", fmt.Errorf("read request: %w", err)
	}
	return buf.String(), nil
}

// nameSlices keep the slices a /filter call's node names are read into: a thousand names
// are 16 KB of string headers per call, a third of what a call allocated, and its share of
// the collections that followed. A slice goes back with its length cut to zero, not cleared
// (clearing a thousand pointers cost a twentieth of a call): until it is reused, or the
// pool lets it go at a collection, it keeps the last body it was read from alive. Strings
// do not change, so that is memory, bounded by the pool, never a wrong name.
var nameSlices = sync.Pool{New: func() any { return new([]string) }}

// maxPooledNames is the longest name slice kept for the next call: one from an outsized
// call is left to the collector.
const maxPooledNames = 1 << 14

// takeNames is an empty slice to read a call's node names into.
func takeNames() *[]string { return nameSlices.Get().(*[]string) }

// giveNames returns a slice from takeNames once nothing reads the names it holds.
func giveNames(names *[]string) {
	if cap(*names) > maxPooledNames {
		return
	}
	*names = (*names)[:0]
	nameSlices.Put(names)
}

// readFilterCall reads a /filter body. NodeNames are appended to names[:0] when names is
// not nil, so a caller can lend a slice to read them into.
func readFilterCall(body string, names []string) (filterCall, error) {
	var c filterCall
	var seen fieldSet
	err := readCall(body, func(d *callReader, key string) error {
		switch {
		case foldKey(key, "Pod"):
			return d.once(&seen, fieldPod, key, func() error { return d.pod(&c.Pod) })
		case foldKey(key, "NodeNames"):
			return d.once(&seen, fieldNodeNames, key, func() error { return d.strings(&c.NodeNames, names) })
		case foldKey(key, "Nodes"):
			return d.once(&seen, fieldNodes, key, func() error { return d.nodeList(&c.Nodes) })
		}
		return d.skip()
	})
	return c, err
}

// readPreemptCall reads a /preempt body.
func readPreemptCall(body string) (preemptCall, error) {
	var c preemptCall
	var seen fieldSet
	err := readCall(body, func(d *callReader, key string) error {
		if foldKey(key, "Pod") {
			return d.once(&seen, fieldPod, key, func() error { return d.pod(&c.Pod) })
		}
		return d.skip()
	})
	return c, err
}

// readBindCall reads a /bind body. Every field must be there: a binding names its pod and
// node, and nothing is bound for a call that does not.
func readBindCall(body string) (bindCall, error) {
	var c bindCall
	var seen fieldSet
	var uid string
	err := readCall(body, func(d *callReader, key string) error {
		switch {
		case foldKey(key, "PodName"):
			return d.once(&seen, fieldName, key, func() error { return d.stringField(&c.Pod.Name, key) })
		case foldKey(key, "PodNamespace"):
			return d.once(&seen, fieldNamespace, key, func() error { return d.stringField(&c.Pod.Namespace, key) })
		case foldKey(key, "PodUID"):
			return d.once(&seen, fieldUID, key, func() error { return d.stringField(&uid, key) })
		case foldKey(key, "Node"):
			return d.once(&seen, fieldNode, key, func() error { return d.stringField(&c.Node, key) })
		}
		return d.skip()
	})
	c.Pod.UID = types.UID(uid)
	if err == nil && (c.Pod.Name == "" || c.Pod.Namespace == "" || c.Pod.UID == "" || c.Node == "") {
		err = fmt.Errorf("malformed request: a binding needs PodName, PodNamespace, PodUID and Node")
	}
	return c, err
}

// readCall reads body as one JSON object (or null), calling field for each key with the
// reader at the key's value, which field must read or skip; nothing but white space may
// follow the object.
func readCall(body string, field func(d *callReader, key string) error) error {
	d := &callReader{s: body}
	d.space()
	var err error
	switch {
	case d.i == len(d.s):
		err = d.errorf("no JSON in the body")
	case d.literal("null"):
	case d.peek() == '{':
		err = d.object(func(key string) error { return field(d, key) })
	default:
		err = d.errorf("the body is not a JSON object")
	}
	if err == nil {
		if d.space(); d.i < len(d.s) {
			err = d.errorf("data after the JSON object")
		}
	}
	if err != nil {
		return fmt.Errorf("malformed request: %w", err)
	}
	return nil
}

// foldKey tells whether encoding/json would decode key into the field named name: an
// exact match, or one under Unicode case folding.
func foldKey(key, name string) bool { return key == name || strings.EqualFold(key, name) }

// A fieldSet records which of a call's fields were read, to refuse a field given twice
// (encoding/json would merge the two).
type fieldSet uint16

const (
	fieldPod fieldSet = 1 << iota
	fieldNodeNames
	fieldNodes
	fieldMetadata
	fieldName
	fieldNamespace
	fieldUID
	fieldItems
	fieldNode
)

// maxDepth is encoding/json's limit of nested arrays and objects.
const maxDepth = 10000

// callReader reads JSON from s in one pass. Strings it returns are substrings of s when
// they hold no escape, so reading a call allocates little beyond one copy of the body.
type callReader struct {
	s string
	i int
	// depth is the number of arrays and objects open around d.i.
	depth int
}

func (d *callReader) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", d.i, fmt.Sprintf(format, args...))
}

func (d *callReader) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

func (d *callReader) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// expect consumes c, after white space.
func (d *callReader) expect(c byte) error {
	d.space()
	if d.peek() != c {
		if d.i == len(d.s) {
			return d.errorf("unexpected end of JSON input, want %q", c)
		}
		return d.errorf("invalid character %q, want %q", d.s[d.i], c)
	}
	d.i++
	return nil
}

// literal consumes word (null, true, false) if it comes next.
func (d *callReader) literal(word string) bool {
	if !strings.HasPrefix(d.s[d.i:], word) {
		return false
	}
	d.i += len(word)
	return true
}

// once reads a field of the call unless it was read already.
func (d *callReader) once(seen *fieldSet, f fieldSet, key string, read func() error) error {
	if *seen&f != 0 {
		return d.errorf("field %q given twice", key)
	}
	*seen |= f
	return read()
}

// object reads an object at d.i, calling field with the reader at each key's value.
func (d *callReader) object(field func(key string) error) error {
	d.i++ // '{'
	d.depth++
	defer func() { d.depth-- }()
	d.space()
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		d.space()
		if d.peek() != '"' {
			return d.errorf("want an object key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.space()
		if err := field(key); err != nil {
			return err
		}
		d.space()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.errorf("want ',' or '}' after an object value")
		}
	}
}

// array reads an array at d.i, calling elem with the reader at each element.
func (d *callReader) array(elem func() error) error {
	d.i++ // '['
	d.depth++
	defer func() { d.depth-- }()
	d.space()
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		d.space()
		if err := elem(); err != nil {
			return err
		}
		d.space()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.errorf("want ',' or ']' after an array element")
		}
	}
}

// pod reads the call's pod: its namespace, name and uid, in metadata.
func (d *callReader) pod(into **callPod) error {
	switch {
	case d.literal("null"):
		*into = nil
		return nil
	case d.peek() != '{':
		return d.errorf("the pod is not a JSON object")
	}
	p := &callPod{}
	*into = p
	var seen fieldSet
	return d.object(func(key string) error {
		if !foldKey(key, "metadata") {
			return d.skip()
		}
		return d.once(&seen, fieldMetadata, key, func() error {
			if d.literal("null") {
				return nil
			}
			if d.peek() != '{' {
				return d.errorf("the pod's metadata is not a JSON object")
			}
			var seen fieldSet
			return d.object(func(key string) error {
				switch {
				case foldKey(key, "name"):
					return d.once(&seen, fieldName, key, func() error { return d.stringField(&p.Name, "metadata.name") })
				case foldKey(key, "namespace"):
					return d.once(&seen, fieldNamespace, key, func() error { return d.stringField(&p.Namespace, "metadata.namespace") })
				case foldKey(key, "uid"):
					var uid string
					err := d.once(&seen, fieldUID, key, func() error { return d.stringField(&uid, "metadata.uid") })
					p.UID = types.UID(uid)
					return err
				}
				return d.skip()
			})
		})
	})
}

// strings reads an array of strings (or null); a null element is "", as encoding/json has it.
// It reads the array itself rather than through array, and a plain name in one loop: a call
// has a thousand names, and this is most of the reading.
func (d *callReader) strings(into *[]string, scratch []string) error {
	switch {
	case d.literal("null"):
		*into = nil
		return nil
	case d.peek() != '[':
		return d.errorf("the node names are not a JSON array")
	}
	out := scratch[:0]
	if out == nil {
		out = make([]string, 0, d.countElements())
	}
	d.i++
	d.space()
	if d.peek() == ']' {
		d.i++
		*into = out
		return nil
	}
	for {
		d.space()
		if name, ok := d.plainString(); ok {
			out = append(out, name)
		} else {
			var name string
			if err := d.stringField(&name, "a node name"); err != nil {
				return err
			}
			out = append(out, name)
		}
		d.space()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			*into = out
			return nil
		default:
			return d.errorf("want ',' or ']' after an array element")
		}
	}
}

// plainString reads a string at d.i that is plain ASCII with no escape, the shape of every
// node name, and says false, reading nothing, for anything else.
func (d *callReader) plainString() (string, bool) {
	s, i := d.s, d.i
	if i >= len(s) || s[i] != '"' {
		return "", false
	}
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		if c == '"' {
			d.i = j + 1
			return s[i+1 : j], true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return "", false
		}
	}
	return "", false
}

// nodeList reads a NodeList (or null) for the names of its items.
func (d *callReader) nodeList(into *[]string) error {
	switch {
	case d.literal("null"):
		*into = nil
		return nil
	case d.peek() != '{':
		return d.errorf("the nodes are not a JSON object")
	}
	out := []string{}
	var seen fieldSet
	err := d.object(func(key string) error {
		if !foldKey(key, "items") {
			return d.skip()
		}
		return d.once(&seen, fieldItems, key, func() error {
			if d.literal("null") {
				return nil
			}
			if d.peek() != '[' {
				return d.errorf("the nodes' items are not a JSON array")
			}
			return d.array(func() error {
				name, err := d.nodeName()
				out = append(out, name)
				return err
			})
		})
	})
	*into = out
	return err
}

// nodeName reads a node (or null) for its metadata.name.
func (d *callReader) nodeName() (string, error) {
	switch {
	case d.literal("null"):
		return "", nil
	case d.peek() != '{':
		return "", d.errorf("a node is not a JSON object")
	}
	var name string
	var seen fieldSet
	err := d.object(func(key string) error {
		if !foldKey(key, "metadata") {
			return d.skip()
		}
		return d.once(&seen, fieldMetadata, key, func() error {
			if d.literal("null") {
				return nil
			}
			if d.peek() != '{' {
				return d.errorf("a node's metadata is not a JSON object")
			}
			var seen fieldSet
			return d.object(func(key string) error {
				if !foldKey(key, "name") {
					return d.skip()
				}
				return d.once(&seen, fieldName, key, func() error { return d.stringField(&name, "a node's metadata.name") })
			})
		})
	})
	return name, err
}

// stringField reads a string into s; null leaves s as it is, as encoding/json does.
func (d *callReader) stringField(s *string, what string) error {
	switch {
	case d.literal("null"):
		return nil
	case d.peek() != '"':
		if d.i == len(d.s) {
			return d.errorf("unexpected end of JSON input")
		}
		return d.errorf("%s is not a string", what)
	}
	v, err := d.str()
	*s = v
	return err
}

// countElements guesses the length of the array of strings at d.i by its commas, so that
// the slice is made once; any miscount only costs an append.
func (d *callReader) countElements() int {
	end := strings.IndexByte(d.s[d.i:], ']')
	if end < 0 {
		return 0
	}
	return strings.Count(d.s[d.i:d.i+end], ",") + 1
}

// str reads a string at d.i ('"'): a substring of the body when it holds no escape and is
// valid UTF-8, else what encoding/json makes of it.
func (d *callReader) str() (string, error) {
	if v, ok := d.plainString(); ok {
		return v, nil
	}
	return d.strSlow()
}

// strSlow is str for a string with escapes, control characters or bytes beyond ASCII.
func (d *callReader) strSlow() (string, error) {
	start := d.i
	d.i++
	plain := true
	for {
		if d.i >= len(d.s) {
			return "", d.errorf("unexpected end of JSON input in a string")
		}
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			if plain {
				return d.s[start+1 : d.i-1], nil
			}
			var v string
			if err := json.Unmarshal([]byte(d.s[start:d.i]), &v); err != nil {
				return "", d.errorf("string: %v", err)
			}
			return v, nil
		case c == '\\':
			plain = false
			d.i++
			switch d.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i++
			case 'u':
				d.i++
				for range 4 {
					if !isHex(d.peek()) {
						return "", d.errorf("invalid \\u escape in a string")
					}
					d.i++
				}
			default:
				return "", d.errorf("invalid escape in a string")
			}
		case c < 0x20:
			return "", d.errorf("control character %q in a string", c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false // encoding/json replaces invalid UTF-8
			}
			d.i += size
		default:
			d.i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a JSON number at d.i.
func (d *callReader) number() error {
	digits := func() int {
		n := 0
		for d.i < len(d.s) && '0' <= d.s[d.i] && d.s[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case '1' <= c && c <= '9':
		digits()
	default:
		return d.errorf("invalid number")
	}
	if d.peek() == '.' {
		d.i++
		if digits() == 0 {
			return d.errorf("invalid number: no digit after the decimal point")
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if digits() == 0 {
			return d.errorf("invalid number: no digit in the exponent")
		}
	}
	return nil
}

// skip reads over one value of any kind, checking that it is JSON. It keeps its own stack
// of open arrays and objects, so a hostile nesting costs no Go stack, and refuses to nest
// deeper than encoding/json does.
func (d *callReader) skip() error {
	var stack []byte // the closing bracket of each open array or object
	for {
		// A value comes next.
		d.space()
		switch c := d.peek(); {
		case c == '{' || c == '[':
			if d.depth+len(stack) == maxDepth {
				return d.errorf("exceeded max depth")
			}
			d.i++
			d.space()
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			if d.peek() == closing {
				d.i++
				break
			}
			stack = append(stack, closing)
			if closing == '}' {
				if err := d.key(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, err := d.str(); err != nil {
				return err
			}
		case c == '-' || '0' <= c && c <= '9':
			if err := d.number(); err != nil {
				return err
			}
		case d.literal("true"), d.literal("false"), d.literal("null"):
		case d.i == len(d.s):
			return d.errorf("unexpected end of JSON input")
		default:
			return d.errorf("invalid character %q looking for a value", d.s[d.i])
		}
		// A value has ended: close what it ends, until another value is due.
		for {
			if len(stack) == 0 {
				return nil
			}
			d.space()
			closing := stack[len(stack)-1]
			c := d.peek()
			if c == closing {
				d.i++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return d.errorf("want ',' or %q", closing)
			}
			d.i++
			if closing == '}' {
				if err := d.key(); err != nil {
					return err
				}
			}
			break
		}
	}
}

// key reads an object key and its colon.
func (d *callReader) key() error {
	d.space()
	if d.peek() != '"' {
		return d.errorf("want an object key")
	}
	if _, err := d.str(); err != nil {
		return err
	}
	return d.expect(':')
}
