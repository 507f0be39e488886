import assert from "node:assert/strict";
import { test } from "node:test";

import { changeKind, configurationAnswer, DEFAULT_SETTINGS, initializationOptions, serverSettings } from "../src/settings";

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

test("defaults when nothing is set", () => {
  const { settings, problems } = serverSettings(reader({}));
  assert.deepEqual(settings, DEFAULT_SETTINGS);
  assert.deepEqual(problems, []);
});

test("settings map to initializationOptions.settings with the server's key names", () => {
  const { settings } = serverSettings(
    reader({
      enable: false,
      select: ["gl1", "GL203"],
      ignore: ["GL105"],
      severity: { GL2: "Information", gl105: "off" },
      lintOnChange: false,
      debounce: 120,
      interpreter: ["/usr/bin/python3"],
      trace: { server: "verbose" },
    }),
  );
  assert.deepEqual(initializationOptions(settings), {
    settings: {
      enable: false,
      select: ["GL1", "GL203"],
      ignore: ["GL105"],
      severity: { GL2: "information", GL105: "off" },
      lintOnChange: false,
      debounce: 120,
    },
  });
});

test("a debounce that is not a number of milliseconds falls back to the default with a message", () => {
  const { settings, problems } = serverSettings(reader({ debounce: "fast" }));
  assert.equal(settings.debounce, DEFAULT_SETTINGS.debounce);
  assert.ok(problems.some((p) => p.includes("graphlife.debounce")));
});

test("broken values are dropped with a message naming the setting", () => {
  const { settings, problems } = serverSettings(
    reader({ enable: "yes", select: "GL101", ignore: [3], severity: { GL101: "loud", E501: "off", GL102: "hint" } }),
  );
  assert.equal(settings.enable, true);
  assert.deepEqual(settings.select, ["GL101"]);
  assert.deepEqual(settings.ignore, []);
  assert.deepEqual(settings.severity, { GL102: "hint" });
  const text = problems.join("\n");
  assert.match(text, /graphlife\.enable must be true or false/);
  assert.match(text, /graphlife\.ignore must be a list of rule codes/);
  assert.match(text, /"loud" for GL101 is not one of error, warning, information, hint, off/);
  assert.match(text, /"E501" is not a graphlife rule code/);
});

test("a severity that is not an object is reported", () => {
  const { settings, problems } = serverSettings(reader({ severity: "error" }));
  assert.deepEqual(settings.severity, {});
  assert.match(problems[0], /graphlife\.severity must map rule codes/);
});

test("workspace/configuration answers for section graphlife and graphlife.<key> only", () => {
  const { settings } = serverSettings(reader({ select: ["GL1"] }));
  assert.deepEqual(configurationAnswer("graphlife", settings), settings);
  assert.deepEqual(configurationAnswer("graphlife.select", settings), ["GL1"]);
  assert.equal(configurationAnswer("graphlife.interpreter", settings), undefined);
  assert.equal(configurationAnswer("python", settings), undefined);
  assert.equal(configurationAnswer(undefined, settings), undefined);
});

test("changeKind names only our own keys: graphlife.interpreter, and the settings the server reads", () => {
  const only = (...sections: string[]) => (s: string) => sections.some((x) => x === s || x.startsWith(s + "."));
  assert.deepEqual(changeKind(only("graphlife.interpreter")), { interpreter: true, server: false });
  assert.deepEqual(changeKind(only("graphlife.severity")), { interpreter: false, server: true });
  assert.deepEqual(changeKind(only("graphlife.interpreter", "graphlife.select")), { interpreter: true, server: true });
  assert.deepEqual(changeKind(only("graphlife.trace.server")), { interpreter: false, server: false });
  assert.deepEqual(changeKind(only("python.defaultInterpreterPath")), { interpreter: false, server: false });
});
