package node

import (
	"regexp"
	"strings"
	"testing"
)

// brokenBuildSteps: faulty steps per seed of a broken build's run (20 s of
// virtual time: a broken build shows within it).
const brokenBuildSteps = 20_000

// TestNodeSimCheckersCatchBrokenBuilds shows that every checker of the
// whole-node simulator fails on a build broken on purpose
// (partition_broken.go): for each deliberate bug, seeds from 1 run with
// every complaint kept until each checker the bug must trip has fired, at
// most seedsMax seeds. A checker that never fires on its bug could not
// catch it in a sweep either.
func TestNodeSimCheckersCatchBrokenBuilds(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("about 11 s, one goroutine: not under -short or -race")
	}
	cases := []struct {
		name     string
		broken   partitionBreakage
		seedsMax uint64
		checkers map[string]*regexp.Regexp // checker: its complaint
	}{
		{
			name: "partition groups commit on the primary alone", broken: partitionBreakage{quorumOfOne: true}, seedsMax: 60,
			checkers: map[string]*regexp.Regexp{
				"an offset acknowledged for two messages":    regexp.MustCompile(`offset \d+ acknowledged twice`),
				"an acknowledged message at its offset":      regexp.MustCompile(`acknowledged \S+ at offset \d+ holds`),
				"polls agree with each other":                regexp.MustCompile(`an earlier poll saw`),
				"polls return only what every replica keeps": regexp.MustCompile(`a poll saw \S+ at offset \d+, the log holds`),
			},
		},
		{
			name: "sends are not checked against the retry table", broken: partitionBreakage{ignoreRetries: true}, seedsMax: 30,
			checkers: map[string]*regexp.Regexp{
				"no message twice in a log": regexp.MustCompile(`at offsets \d+ and \d+ \(applied twice\)`),
			},
		},
		{
			name: "a recognised retry is answered one offset off", broken: partitionBreakage{replayOffByOne: true}, seedsMax: 30,
			checkers: map[string]*regexp.Regexp{
				"a retry's answer holds its messages": regexp.MustCompile(`acknowledged \S+ at offset \d+ holds`),
			},
		},
		{
			name: "backups restamp the batches", broken: partitionBreakage{backupsRestamp: true}, seedsMax: 10,
			checkers: map[string]*regexp.Regexp{
				"byte-identical segment files": regexp.MustCompile(`segment files differ`),
			},
		},
		{
			name: "offset stores of even values apply five less", broken: partitionBreakage{storeLess: true}, seedsMax: 20,
			checkers: map[string]*regexp.Regexp{
				"a consumer offset never goes back":          regexp.MustCompile(`offset went back from \d+ to \d+`),
				"every replica holds the acknowledged store": regexp.MustCompile(`offset \d+; acknowledged \d+`),
			},
		},
		{
			name: "backups flip a byte of the batches they write", broken: partitionBreakage{backupsFlipAByte: true}, seedsMax: 20,
			checkers: map[string]*regexp.Regexp{
				"damage only where a fault made it": regexp.MustCompile(`found damage in its log, and no byte rotted nor write tore`),
			},
		},
		{
			name: "backups skip purges", broken: partitionBreakage{backupsSkipPurge: true}, seedsMax: 40,
			checkers: map[string]*regexp.Regexp{
				"every purge carried out on every replica": regexp.MustCompile(`carried out purge generation \d+, metadata wants \d+`),
			},
		},
		{
			name: "offset stores apply one more", broken: partitionBreakage{storeMore: true}, seedsMax: 20,
			checkers: map[string]*regexp.Regexp{
				"a consumer offset is one a client asked for": regexp.MustCompile(`was never stored`),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fired := map[string]uint64{}
			for seed := uint64(1); seed <= tc.seedsMax && len(fired) < len(tc.checkers); seed++ {
				w, err := newBrokenSimWorld(seed, tc.broken)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				w.keepGoing = true
				err = w.run(brokenBuildSteps, nodeSimHealSteps)
				complaints := w.caught
				if err != nil {
					complaints = append(complaints, err)
				}
				for checker, re := range tc.checkers {
					for _, c := range complaints {
						for _, line := range strings.Split(c.Error(), "\n") {
							if _, ok := fired[checker]; !ok && re.MatchString(line) {
								fired[checker] = seed
								t.Logf("seed %d: %s: %s", seed, checker, strings.TrimSpace(line))
							}
						}
					}
				}
			}
			for checker := range tc.checkers {
				if _, ok := fired[checker]; !ok {
					t.Errorf("checker %q never fired in %d seeds", checker, tc.seedsMax)
				}
			}
		})
	}
}
