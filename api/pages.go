package api

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"slotplane/apitypes"
)

// Lists come a page at a time, as Kubernetes' do: ?limit= items at most, and a continue
// token when more follow. Items are ordered by name and the token carries the last name
// given, so a page goes on from there whatever changed meanwhile: an object made or deleted
// between pages shows or not by its name, never twice.
const (
	defaultPageSize = 500
	maxPageSize     = 1000
)

const continuePrefix = "v1/"

// page is where a list request starts (after the name in its continue token) and how many
// items it may have.
type page struct {
	after string
	limit int
}

func pageOf(c *gin.Context) (page, *apitypes.Error) {
	p := page{limit: defaultPageSize}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return p, invalid(apitypes.FieldError{Field: "limit", Message: fmt.Sprintf("%.20q is not a number from 1 to %d", v, maxPageSize)})
		}
		p.limit = n
	}
	if v := c.Query("continue"); v != "" {
		raw, err := base64.RawURLEncoding.DecodeString(v)
		name, ok := strings.CutPrefix(string(raw), continuePrefix)
		if err != nil || !ok || name == "" || len(name) > 253 {
			return p, invalid(apitypes.FieldError{Field: "continue", Message: "not a continue token of this API: pass the one the previous page gave"})
		}
		p.after = name
	}
	return p, nil
}

// cut keeps the items of the page from a list sorted by name, and the token of the next
// page ("" when none follows).
func cut[T any](items []T, p page, name func(T) string) ([]T, string) {
	start := 0
	if p.after != "" {
		for start < len(items) && name(items[start]) <= p.after {
			start++
		}
	}
	items = items[start:]
	if len(items) <= p.limit {
		return items, ""
	}
	items = items[:p.limit]
	return items, base64.RawURLEncoding.EncodeToString([]byte(continuePrefix + name(items[len(items)-1])))
}
