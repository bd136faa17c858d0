package hfconfig

import (
	"encoding/json"
	"fmt"
)

var (
	jsonUnmarshal = json.Unmarshal
	jsonMarshal   = json.Marshal
)

// shapeString formats a shape as the error messages do, e.g. "[192 576]".
func shapeString(s []int) string { return fmt.Sprint(s) }
