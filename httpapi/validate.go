package httpapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// required checks (present, name) pairs: a missing field is a shape error
// (422), as serde's missing-field rejection is.
func required(pairs ...any) error {
	var missing []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if ok, _ := pairs[i].(bool); !ok {
			missing = append(missing, fmt.Sprint(pairs[i+1]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing field `%s`", strings.Join(missing, "`, `"))
	}
	return nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func sortStrings(s []string) { sort.Strings(s) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
