package report

import (
	"encoding/json"
	"io"

	"gpuz/internal/bench"
)

// WriteJSON writes r as an indented JSON object for programs to read: the
// run's results document as bench makes it (bench.Result.Document): the
// version of the format (results.Version), the header, every mode with all
// its epochs and the Stats of its timed epochs, and the peak RSS. Field
// names are snake_case; durations are float seconds, sizes are bytes. An
// epoch's value that is not a finite number, such as a diverged loss, is
// written as null, and so are the cpu mode's copies, which do not apply to
// it.
func WriteJSON(w io.Writer, r bench.Result) error {
	return encodeJSON(w, r.Document())
}

// encodeJSON writes doc indented, without escaping HTML characters: every
// JSON document gpuz writes goes through it.
func encodeJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}
