// Scores cache-tests results (the CLI's JSON: test id -> true, or [kind of failure, message])
// against the suite's own test definitions: passes overall, and each test the suite counts as a
// requirement of RFC 9111 (no `kind`, or kind 'required') that did not pass.
//   node score.mjs RESULTS.json [NAME]    -> one JSON line: {name, run, passed, required, ...}
import fs from 'fs'
import tests from 'http-cache-tests/tests/index.mjs'
import surrogate from 'http-cache-tests/tests/surrogate-control.mjs'

const [file, name] = process.argv.slice(2)
const results = JSON.parse(fs.readFileSync(file, 'utf8'))
const score = { name: name || file, run: 0, passed: 0, required: 0, required_passed: 0,
  optimal: 0, optimal_passed: 0, checks: 0, checks_yes: 0, required_failed: [] }
for (const suite of [...tests, surrogate]) {
  for (const test of suite.tests) {
    if (test.browser_only) continue
    const result = results[test.id]
    if (result === undefined) continue
    const pass = result === true
    score.run++
    if (pass) score.passed++
    if (test.kind === undefined || test.kind === 'required') {
      score.required++
      if (pass) score.required_passed++
      else score.required_failed.push(test.id)
    } else if (test.kind === 'optimal') {
      score.optimal++
      if (pass) score.optimal_passed++
    } else {
      score.checks++
      if (pass) score.checks_yes++
    }
  }
}
console.log(JSON.stringify(score))
