package v1beta1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FlinkConfiguration is spec.flinkConfiguration in the form Flink reads it in the end: flat
// keys (taskmanager.numberOfTaskSlots) with string values.
//
// The operator takes more than that: since its 1.13 release the field is free YAML, so a user may nest
// keys (taskmanager: {numberOfTaskSlots: 2}) and give numbers, booleans or lists as values.
// The operator flattens such a tree before it hands it to Flink, and UnmarshalJSON does the
// same, so a FlinkDeployment written either way reads into this map: nested keys are joined
// with dots, numbers and booleans become their JSON text, a list becomes its items joined by
// ";" (Flink's list notation; an item that is itself an object or list is kept as JSON), and
// null values are dropped. When the same key is given both nested and spelled out, the
// spelled-out one wins. Writing always gives the flat form, which the operator accepts too.
type FlinkConfiguration map[string]string

// UnmarshalJSON reads a flat or nested configuration object; see FlinkConfiguration.
func (c *FlinkConfiguration) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	switch tree := tree.(type) {
	case nil:
		*c = nil
		return nil
	case map[string]any:
		out := make(FlinkConfiguration, len(tree))
		flattenConfig("", tree, out)
		*c = out
		return nil
	default:
		return fmt.Errorf("flinkConfiguration must be an object of configuration keys, not %s", bytes.TrimSpace(data))
	}
}

// flattenConfig adds the entries of the configuration tree node under prefix to out. Keys
// go in sorted order, so that a key spelled out with dots ("a.b") comes after the nested
// object it would collide with ("a") and wins.
func flattenConfig(prefix string, node any, out FlinkConfiguration) {
	switch node := node.(type) {
	case nil:
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(node)) {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flattenConfig(key, node[k], out)
		}
	case []any:
		items := make([]string, len(node))
		for i, item := range node {
			items[i] = configText(item)
		}
		out[prefix] = strings.Join(items, ";")
	default:
		out[prefix] = configText(node)
	}
}

// configText is a scalar's configuration text: a string as it is, anything else as JSON.
func configText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v) // not reached: the value came from JSON
	}
	return string(data)
}
