package chat

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// strftime formats t as Python's datetime.strftime does on Linux in the C
// locale, for a naive time (%z and %Z are empty): the C99 directives,
// glibc's %e, %F, %T, %D, %R, %h, %n, %t, %C, %G, %g, %V, %u, and its "-"
// flag that drops the padding of a number (%-d). Any other directive is
// an error rather than a guess.
func strftime(t time.Time, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", fmt.Errorf("strftime: format %q ends with %%", format)
		}
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		num := func(n, width int) {
			s := strconv.Itoa(n)
			if !noPad {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		d := format[i]
		switch d {
		case '%':
			b.WriteByte('%')
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'c':
			fmt.Fprintf(&b, "%s %s %2d %02d:%02d:%02d %d", t.Weekday().String()[:3], t.Month().String()[:3], t.Day(), t.Hour(), t.Minute(), t.Second(), t.Year())
		case 'C':
			num(t.Year()/100, 2)
		case 'd':
			num(t.Day(), 2)
		case 'D':
			fmt.Fprintf(&b, "%02d/%02d/%02d", int(t.Month()), t.Day(), t.Year()%100)
		case 'e':
			if noPad {
				num(t.Day(), 0)
			} else {
				fmt.Fprintf(&b, "%2d", t.Day())
			}
		case 'f':
			num(t.Nanosecond()/1000, 6)
		case 'F':
			fmt.Fprintf(&b, "%d-%02d-%02d", t.Year(), int(t.Month()), t.Day())
		case 'G':
			y, _ := t.ISOWeek()
			num(y, 4)
		case 'g':
			y, _ := t.ISOWeek()
			num(y%100, 2)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num((t.Hour()+11)%12+1, 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'm':
			num(int(t.Month()), 2)
		case 'M':
			num(t.Minute(), 2)
		case 'n':
			b.WriteByte('\n')
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'R':
			fmt.Fprintf(&b, "%02d:%02d", t.Hour(), t.Minute())
		case 'S':
			num(t.Second(), 2)
		case 't':
			b.WriteByte('\t')
		case 'T', 'X':
			fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		case 'u':
			num((int(t.Weekday())+6)%7+1, 1)
		case 'V':
			_, w := t.ISOWeek()
			num(w, 2)
		case 'w':
			num(int(t.Weekday()), 1)
		case 'x':
			fmt.Fprintf(&b, "%02d/%02d/%02d", int(t.Month()), t.Day(), t.Year()%100)
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			num(t.Year(), 0)
		case 'z', 'Z':
			// A naive datetime, as datetime.now() returns, has no zone.
		default:
			return "", fmt.Errorf("strftime: directive %%%c is not supported", d)
		}
	}
	return b.String(), nil
}
