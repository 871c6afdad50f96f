package httpapi

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

func TestAdmissionBounds(t *testing.T) {
	a := newAdmission()
	for i := range writesPerCredentialMax {
		if !a.admit(httptest.NewRecorder(), "k") {
			t.Fatalf("write %d refused", i)
		}
	}
	w := httptest.NewRecorder()
	if a.admit(w, "k") || w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("33rd write on one credential: %d %v", w.Code, w.Header())
	}
	for i := writesPerCredentialMax; i < writesPerNodeMax; i++ {
		if !a.admit(httptest.NewRecorder(), fmt.Sprint("other", i)) {
			t.Fatalf("node write %d refused", i)
		}
	}
	w = httptest.NewRecorder()
	if a.admit(w, "fresh") || w.Code != 503 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("129th write on the node: %d", w.Code)
	}
	a.release("k")
	if !a.admit(httptest.NewRecorder(), "fresh") {
		t.Fatal("a released slot was not reusable")
	}
}
