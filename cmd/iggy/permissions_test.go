package main

import (
	"strings"
	"testing"
)

func TestParseStreamPermissions(t *testing.T) {
	for in, want := range map[string]string{
		"1":                                     "1",
		"2:m_str,r_str,m_top,r_top,p_msg,s_msg": "2:manage_stream,read_stream,manage_topics,read_topics,poll_messages,send_messages",
		"3#1:s_msg#2:s_msg":                     "3#1:send_messages#2:send_messages",
		"4:manage_stream,r_top#1:s_msg,p_msg#2:manage_topic": "4:manage_stream,read_topics#1:poll_messages,send_messages#2:manage_topic",
	} {
		sp, err := parseStreamPermissions(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := formatStreamPermissions(sp); got != want {
			t.Errorf("%q parsed to %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"x:m_str":           "invalid stream ID",
		"1:m_str,bogus":     `unknown permission "bogus" for stream ID: 1`,
		"1:a,b":             `unknown permissions "a", "b" for stream ID: 1`,
		"1#2:manage_stream": `unknown permission "manage_stream" for topic ID: 2`,
		"1#2#2":             "given twice",
		"1:":                `"[empty]"`,
	} {
		_, err := parseStreamPermissions(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error mentioning %q", in, err, want)
		}
	}
}

func TestBuildPermissions(t *testing.T) {
	if p, err := buildPermissions("", nil); p != nil || err != nil {
		t.Fatalf("no options: %+v %v", p, err)
	}
	p, err := buildPermissions("", []string{"5:r_str", "1:s_msg", "5:p_msg"})
	if err != nil || p.Global.ManageServers || len(p.Streams) != 2 || p.Streams[0].StreamID != 1 || !p.Streams[1].PollMessages || p.Streams[1].ReadStream {
		t.Fatalf("streams only: %+v %v", p, err)
	}
	if _, err := buildPermissions("m_srv,nope", nil); err == nil {
		t.Fatal("unknown global permission accepted")
	}
}
