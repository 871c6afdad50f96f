package main

import (
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestParseHeadersRoundTrip(t *testing.T) {
	block, err := parseHeaders([]string{"url:string:http://x:80,flag:bool:true", "n:int16:-2,big:uint128:340282366920938463463374607431768211455,f:float64:1.5,r:raw:ab"})
	if err != nil {
		t.Fatal(err)
	}
	got := decodeHeaders(block)
	want := []headerJSON{{"url", "string", "http://x:80"}, {"flag", "bool", "true"}, {"n", "int16", "-2"},
		{"big", "uint128", "340282366920938463463374607431768211455"}, {"f", "float64", "1.5"}, {"r", "raw", "ab"}}
	if len(got) != len(want) {
		t.Fatalf("decoded %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("header %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if h, _ := parseHeaders(nil); h != nil {
		t.Fatal("no -H gave a header block")
	}
}

func TestParseHeadersRejects(t *testing.T) {
	for in, want := range map[string]string{
		"key:string":         "KEY:KIND:VALUE",
		"k:strin:v":          "is not one of",
		"k:uint8:69.42":      "not a whole number",
		"k:uint8:256":        "out of range",
		"k:int8:-129":        "out of range",
		"k:bool:maybe":       "true or false",
		":string:v":          "1..255",
		"a:string:1,a:raw:2": "given twice",
		"k:string:":          "1..255 bytes",
	} {
		_, err := parseHeaders([]string{in})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseHeaders(%q) = %v, want an error mentioning %q", in, err, want)
		}
	}
}

func TestFormatHeaderValueSigned(t *testing.T) {
	v, err := encodeHeaderValue(wire.KindInt64, "-9223372036854775808")
	if err != nil || formatHeaderValue(wire.KindInt64, v) != "-9223372036854775808" {
		t.Fatalf("int64 min: %x %v", v, err)
	}
	if got := formatHeaderValue(wire.KindUint32, []byte{1, 2}); got != "0x0102" {
		t.Fatalf("short fixed-size value = %q", got)
	}
}
