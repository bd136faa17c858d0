package device

import (
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	var m Meter
	m.SetTotal(1000)
	m.Hold(300)
	m.Hold(200)
	m.Hold(-400)
	m.Uploaded(40, time.Second)
	m.Downloaded(8, 2*time.Second)
	want := Stats{AllocatedBytes: 100, PeakBytes: 500, TotalBytes: 1000, UploadBytes: 40, DownloadBytes: 8, CopyTime: 3 * time.Second}
	if got := m.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	m.ResetPeak()
	if got := m.Stats().PeakBytes; got != 100 {
		t.Errorf("after ResetPeak, PeakBytes = %d, want 100", got)
	}
}

func TestCheckCopy(t *testing.T) {
	b := &hostBuffer{data: make([]float32, 3)}
	if CheckUpload("d", b, make([]float32, 3)) != nil || CheckDownload("d", make([]float32, 3), b) != nil {
		t.Error("a copy of matching lengths reported an error")
	}
	if err := CheckUpload("d", b, make([]float32, 2)); err == nil || err.Error() != "d: upload of 2 elements into a buffer of 3" {
		t.Errorf("CheckUpload: %v", err)
	}
	if err := CheckDownload("d", make([]float32, 4), b); err == nil || err.Error() != "d: download of a buffer of 3 elements into 4" {
		t.Errorf("CheckDownload: %v", err)
	}
}
