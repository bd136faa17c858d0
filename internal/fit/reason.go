package fit

import (
	"fmt"
	"strconv"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/perfmodel"
	"gpuz/internal/units"
)

// NothingFitsError is a search's answer when no candidate fits: it names
// the smallest device need found, or, when a candidate fits the device but
// not the host (Result.HostBound), says the host is the limit with that
// candidate's host need.
type NothingFitsError struct {
	Result Result
}

func (e *NothingFitsError) Error() string {
	r := e.Result
	s := "nothing fits"
	if h := r.HostBound; h.Mode != "" {
		s += fmt.Sprintf(": the host's memory is the limit: the least host need found on %s is %s (%s), %s available, with a device need of %s, within the %s free %s",
			r.Device, units.Bytes(h.Plan.HostNeed), h.Candidate, units.Bytes(h.Plan.HostAvailable),
			units.Bytes(h.Plan.Footprint.Device), units.Bytes(r.Budget), r.lessWhat())
	} else if sm := r.Smallest; sm.Mode != "" {
		s += fmt.Sprintf(": the smallest device need found is %s (%s), %s free %s",
			units.Bytes(sm.Plan.Footprint.Device), sm.Candidate, units.Bytes(r.Budget), r.lessWhat())
	}
	if c := r.CPU; c.Mode != "" {
		s += fmt.Sprintf("; the cpu needs %s of host memory, %s available", units.Bytes(c.Plan.HostNeed), units.Bytes(c.Plan.HostAvailable))
	}
	return s
}

// Err returns a *NothingFitsError when nothing fits, else nil.
func (r Result) Err() error {
	if _, ok := r.Best(); ok {
		return nil
	}
	return &NothingFitsError{r}
}

// lessWhat says what the budget leaves out of the device's free memory:
// "less the 5% margin", "less --take and the 5% margin".
func (r Result) lessWhat() string {
	take := ""
	if r.TakeBytes > 0 {
		take = units.Bytes(r.TakeBytes) + " taken and "
	}
	return fmt.Sprintf("after %sthe %s%% margin", take, strconv.FormatFloat(r.MarginPercent, 'g', -1, 64))
}

// Reason says in one line what the search recommends and why: whether
// cuda fits, the fastest configuration that does with its predicted epoch
// time, and, where the cpu wins, which part of the device's time decides
// it.
func (r Result) Reason() string {
	best, ok := r.Best()
	if !ok {
		return r.Err().Error()
	}
	if len(r.LongestSequences) > 0 {
		return r.reason(best) + "; " + r.longestText()
	}
	if r.LongestContext > 0 {
		return r.reason(best) + fmt.Sprintf("; the longest context it fits: %d positions (--context %d)", r.LongestContext, r.LongestContext)
	}
	return r.reason(best)
}

// reason is Reason's recommendation of best, the configuration it
// recommends.
func (r Result) reason(best Entry) string {
	if best.Plan.Prediction == nil {
		return fmt.Sprintf("nothing has a prediction (%s); listed by bytes copied per epoch, the fewest first: %s",
			r.unpredicted(), best.Candidate)
	}
	cuda := ""
	if c := r.CUDA; c.Mode != "" && !c.Fits && c.Plan.Status.Kind == bench.StatusOK {
		cuda = fmt.Sprintf("cuda does not fit: needs %s, %s free %s; ", units.Bytes(c.Plan.Footprint.Device), units.Bytes(r.Budget), r.lessWhat())
	}
	s := fmt.Sprintf("%sfastest that fits: %s, predicted %s", cuda, best.Candidate, best.predictedText(true))
	if f, ok := r.tiedWith(); ok {
		why := fmt.Sprintf("a tie within %s%%: the simpler first", percent(TieFraction))
		if f.ChangesResults() && !best.ChangesResults() && float64(f.RankTime())*(1+TieFraction) < float64(best.RankTime()) {
			why = fmt.Sprintf("it changes the results and is not faster by more than %s%%", percent(ResultsGainFraction))
		}
		s = fmt.Sprintf("%sbest that fits: %s, predicted %s; %s is predicted %s, %s",
			cuda, best.Candidate, best.predictedText(true), f.Candidate, f.predictedText(false), why)
	}
	if n := len(r.UnrankedOnDevice()); n > 0 && best.Mode.OnHost() {
		return s + fmt.Sprintf("; %d configurations on %s fit but are unranked: %s", n, r.Device, r.unpredicted())
	}
	if best.Mode.OnHost() {
		if dev, ok := r.fastestOnDevice(); ok {
			p := dev.Plan.Prediction
			part, what := decidingPart(p.Prediction)
			s += fmt.Sprintf(" against %s for %s, %s of which is %s", duration(p.Model), dev.Candidate, duration(part), what)
		}
		return s
	}
	if c := r.CUDA; c.Fits && best.Mode != c.Mode && c.Plan.Prediction != nil {
		s += fmt.Sprintf(" against %s for cuda", c.predictedText(false))
	}
	if cpu, ok := r.ranked(bench.ResidentMode(false)); ok {
		s += fmt.Sprintf(" (cpu: %s)", cpu.predictedText(false))
	}
	return s
}

// UnrankedOnDevice returns the configurations on the device (hybrid
// placements aside, which the model never predicts) that fit but have no
// prediction: the device has no profile.
func (r Result) UnrankedOnDevice() []Entry {
	var out []Entry
	for _, e := range r.Unranked {
		if !e.Mode.OnHost() && e.Mode.Predicted() {
			out = append(out, e)
		}
	}
	return out
}

// unpredicted says why the fitting configurations have no prediction.
func (r Result) unpredicted() string {
	if r.Device == "" {
		return "no host profile: give --host-profile"
	}
	return r.Device + " has no profile (sim:PROFILE has one: gpuz devices --profiles)"
}

// fastestOnDevice is the fastest ranked configuration of a mode other
// than cpu.
func (r Result) fastestOnDevice() (Entry, bool) {
	for _, e := range r.Ranked {
		if !e.Mode.OnHost() {
			return e, true
		}
	}
	return Entry{}, false
}

// ranked is the fastest ranked configuration of mode.
func (r Result) ranked(mode bench.Mode) (Entry, bool) {
	for _, e := range r.Ranked {
		if e.Mode == mode {
			return e, true
		}
	}
	return Entry{}, false
}

// decidingPart is the part of a device's prediction that limits it
// (perfmodel's Limiter) and what it is: the fixed cost of the kernel
// launches, the copies between host and device, or the kernels' own
// compute or memory traffic.
func decidingPart(p perfmodel.Prediction) (time.Duration, string) {
	switch p.Limiter {
	case perfmodel.LimitLaunch:
		return p.Launch, "the fixed cost of its kernel launches"
	case perfmodel.LimitCopy:
		return p.Copy, "copies between host and device"
	case perfmodel.LimitCompute:
		return p.Compute, "its kernels' arithmetic"
	}
	return p.Memory, "its kernels' memory traffic"
}

// percent formats a fraction as a percentage, "5" for 0.05.
func percent(f float64) string { return strconv.FormatFloat(f*100, 'g', 3, 64) }

// duration formats d with three significant digits in s, ms or µs.
func duration(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 1:
		return units.Sig3(s) + " s"
	case s >= 1e-3:
		return units.Sig3(s*1e3) + " ms"
	}
	return units.Sig3(s*1e6) + " µs"
}

// predictedText says an entry's prediction in words: its epoch's time
// ("2.41 s", with "per epoch" when long), or a generation's decode tokens a
// second ("6.00 tokens/s decoding", with the first token's time when
// long).
func (e Entry) predictedText(long bool) string {
	p := e.Plan.Prediction
	if g := p.Generation; g != nil {
		s := fmt.Sprintf("%.3g tokens/s decoding", g.DecodeTokensPerSecond())
		if long {
			s += ", the first token after " + duration(g.Prefill.Model)
		}
		return s
	}
	if long {
		return duration(p.Model) + " per epoch"
	}
	return duration(p.Model)
}

// longestText says, under --seq-len max, the longest sequence the device
// fits, at which the search ranked, and the longest of each other mode.
func (r Result) longestText() string {
	l := r.LongestSequences
	s := fmt.Sprintf("the longest sequence on the device: %d tokens (%s, --seq-len %d), at which these are ranked", l[0].Tokens, l[0].Mode, l[0].Tokens)
	for _, o := range l[1:] {
		s += fmt.Sprintf("; %s fits %d (%s)", o.Mode, o.Tokens, o.Candidate)
	}
	return s
}
