package node

import (
	"regexp"
	"strings"
	"testing"
)

// TestMetaSimCheckersCatchBrokenBuilds shows that the metadata
// simulator's checkers fail on a build broken on purpose
// (metadata_broken.go): for each deliberate bug, seeds from 1 run with
// every complaint kept until each checker the bug must trip has fired, at
// most seedsMax seeds.
func TestMetaSimCheckersCatchBrokenBuilds(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("about 5 s, one goroutine: not under -short or -race")
	}
	cases := []struct {
		name     string
		broken   metaSimBreakage
		seedsMax uint64
		checkers map[string]*regexp.Regexp
	}{
		{
			name: "the metadata group commits on the primary alone", broken: metaSimBreakage{meta: metadataBreakage{quorumOfOne: true}}, seedsMax: 60,
			checkers: map[string]*regexp.Regexp{
				"replicas apply one op under one number": regexp.MustCompile(`replicas applied different ops \d+`),
				"an acknowledged op is the client's":     regexp.MustCompile(`acknowledged at op \d+, which holds client`),
			},
		},
		{
			name: "backups answer CreateUser without applying it", broken: metaSimBreakage{meta: metadataBreakage{backupsSkipUsers: true}}, seedsMax: 10,
			checkers: map[string]*regexp.Regexp{
				"every replica answers an op alike":        regexp.MustCompile(`answered \S+ on node \d+ but \S+ on node \d+`),
				"the replicas converge on one state":       regexp.MustCompile(`metadata state \(\d+ bytes\) differs`),
				"the state is what the committed ops give": regexp.MustCompile(`is not the one the \d+ committed ops give`),
			},
		},
		{
			name: "removed partitions keep their files", broken: metaSimBreakage{part: partitionBreakage{removeKeepsFiles: true}}, seedsMax: 60,
			checkers: map[string]*regexp.Regexp{
				"no partition directory metadata does not hold": regexp.MustCompile(`holds partition directories metadata does not \(/`),
			},
		},
		{
			name: "partition groups commit on their primary alone", broken: metaSimBreakage{part: partitionBreakage{quorumOfOne: true}}, seedsMax: 60,
			checkers: map[string]*regexp.Regexp{
				"every acknowledged message at its offset": regexp.MustCompile(`acknowledged c\d+/r\d+/m\d+/ at offset \d+, the log holds`),
				"polls see one message per offset":         regexp.MustCompile(`a poll saw "?c\d+/r\d+/m\d+/"? at offset \d+, (an earlier poll|the log holds)`),
			},
		},
		{
			name: "a retried send is applied again", broken: metaSimBreakage{part: partitionBreakage{ignoreRetries: true}}, seedsMax: 60,
			checkers: map[string]*regexp.Regexp{
				"no message twice": regexp.MustCompile(`message c\d+/r\d+/m\d+/ at offsets \d+ and \d+ \(applied twice\)`),
			},
		},
		{
			name: "a recognised retry is answered one offset off", broken: metaSimBreakage{part: partitionBreakage{replayOffByOne: true}}, seedsMax: 60,
			checkers: map[string]*regexp.Regexp{
				"an acknowledged offset holds the acknowledged message": regexp.MustCompile(`(offset \d+ acknowledged for \S+ and for \S+|acknowledged c\d+/r\d+/m\d+/ at offset \d+, the log holds)`),
			},
		},
		{
			name: "offset stores apply one more than asked", broken: metaSimBreakage{part: partitionBreakage{storeMore: true}}, seedsMax: 30,
			checkers: map[string]*regexp.Regexp{
				"no consumer offset nobody asked for": regexp.MustCompile(`consumer \d+'s offset \d+ was never asked for`),
			},
		},
		{
			name: "offset stores of even values apply five less", broken: metaSimBreakage{part: partitionBreakage{storeLess: true}}, seedsMax: 30,
			checkers: map[string]*regexp.Regexp{
				"consumer offsets never go back": regexp.MustCompile(`consumer \d+'s offset (went back from \d+ to \d+|\d+, below the acknowledged \d+)`),
			},
		},
		{
			name: "backups restamp batches", broken: metaSimBreakage{part: partitionBreakage{backupsRestamp: true}}, seedsMax: 30,
			checkers: map[string]*regexp.Regexp{
				"byte-identical segment files": regexp.MustCompile(`node \d+'s segment files differ from node \d+'s`),
			},
		},
		{
			name: "backups skip purges", broken: metaSimBreakage{part: partitionBreakage{backupsSkipPurge: true}}, seedsMax: 30,
			checkers: map[string]*regexp.Regexp{
				"every purge carried out": regexp.MustCompile(`purge generation \d+, metadata says \d+ and \d+`),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fired := map[string]uint64{}
			for seed := uint64(1); seed <= tc.seedsMax && len(fired) < len(tc.checkers); seed++ {
				w, err := newMetaSimWorld(seed, tc.broken)
				if err != nil {
					t.Fatal(err)
				}
				w.keepGoing = true
				err = w.run(20_000, metaSimHealSteps)
				if err == nil {
					continue
				}
				for name, re := range tc.checkers {
					if _, ok := fired[name]; !ok && re.MatchString(err.Error()) {
						fired[name] = seed
					}
				}
			}
			var missing []string
			for name := range tc.checkers {
				if seed, ok := fired[name]; ok {
					t.Logf("%q fired (seed %d)", name, seed)
				} else {
					missing = append(missing, name)
				}
			}
			if len(missing) > 0 {
				t.Fatalf("within %d seeds these checkers never fired: %s", tc.seedsMax, strings.Join(missing, "; "))
			}
		})
	}
}
