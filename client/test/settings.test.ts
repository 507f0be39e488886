import assert from "node:assert/strict";
import { test } from "node:test";

import {
  changeKind,
  clientSettings,
  configurationAnswer,
  DEFAULT_CLIENT_SETTINGS,
  DEFAULT_SETTINGS,
  initializationOptions,
  restrictedModeMessage,
  serverSettings,
  shouldNotify,
} from "../src/settings";

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
      showSyntaxErrors: true,
      reportingScope: "file",
      language: "auto",
    },
    // The commands hover links and the light bulb may use.
    ruleDocumentationCommand: "graphlife.showRuleDocumentation",
    turnOffRuleCommand: "graphlife.turnOffRule",
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
  assert.deepEqual(changeKind(only("graphlife.interpreter")), { interpreter: true, launch: false, server: false });
  assert.deepEqual(changeKind(only("graphlife.severity")), { interpreter: false, launch: false, server: true });
  assert.deepEqual(changeKind(only("graphlife.interpreter", "graphlife.select")), { interpreter: true, launch: false, server: true });
  assert.deepEqual(changeKind(only("graphlife.trace.server")), { interpreter: false, launch: false, server: false });
  assert.deepEqual(changeKind(only("python.defaultInterpreterPath")), { interpreter: false, launch: false, server: false });
});

test("showSyntaxErrors and reportingScope go to the server; a wrong scope falls back with a message", () => {
  const { settings } = serverSettings(reader({ showSyntaxErrors: false, reportingScope: "workspace" }));
  assert.equal(settings.showSyntaxErrors, false);
  assert.equal(settings.reportingScope, "workspace");
  const broken = serverSettings(reader({ reportingScope: "everything" }));
  assert.equal(broken.settings.reportingScope, "file");
  assert.match(broken.problems[0], /graphlife\.reportingScope must be one of file, workspace/);
});

test("the client's own settings: which graphlife runs and how loud it is", () => {
  assert.deepEqual(clientSettings(reader({})), { settings: DEFAULT_CLIENT_SETTINGS, problems: [] });
  const { settings, problems } = clientSettings(
    reader({ importStrategy: "fromEnvironment", path: ["/venv/bin/graphlife"], args: ["--tcp", " "], showNotifications: "always" }),
  );
  assert.deepEqual(settings, { importStrategy: "fromEnvironment", path: ["/venv/bin/graphlife"], args: ["--tcp"], showNotifications: "always" });
  assert.deepEqual(problems, []);
  const broken = clientSettings(reader({ importStrategy: "pip", path: "/usr/bin/graphlife" }));
  assert.equal(broken.settings.importStrategy, "useBundled");
  assert.deepEqual(broken.settings.path, []);
  assert.equal(broken.problems.length, 2);
});

test("notifications: errors unless off, warnings from onWarning, everything with always", () => {
  assert.equal(shouldNotify("onError", "error"), true);
  assert.equal(shouldNotify("onError", "warning"), false);
  assert.equal(shouldNotify("onWarning", "warning"), true);
  assert.equal(shouldNotify("onWarning", "info"), false);
  assert.equal(shouldNotify("always", "info"), true);
  assert.equal(shouldNotify("off", "error"), false);
});

test("Restricted Mode says which workspace settings were ignored, and only then", () => {
  const inspect = (values: Record<string, unknown>) => (key: string) => ({ workspaceValue: values[key] });
  assert.equal(restrictedModeMessage(true, inspect({ interpreter: ["/ws/.venv/bin/python"] })), undefined);
  assert.equal(restrictedModeMessage(false, inspect({ interpreter: [] })), undefined);
  const message = restrictedModeMessage(false, inspect({ interpreter: ["/ws/.venv/bin/python"], path: ["/ws/bin/graphlife"] })) ?? "";
  assert.match(message, /^Restricted Mode: graphlife ignored graphlife\.interpreter \(\["\/ws\/\.venv\/bin\/python"\]\) and graphlife\.path/);
  const folder = restrictedModeMessage(false, () => ({ workspaceFolderValue: ["/ws/py"] })) ?? "";
  assert.match(folder, /graphlife\.interpreter/);
});

test("graphlife.language goes to the server as auto, en or zh-cn; a hand-written zh-CN is zh-cn; anything else is auto with a message", () => {
  assert.equal(serverSettings(reader({})).settings.language, "auto");
  assert.equal(serverSettings(reader({ language: "zh-CN" })).settings.language, "zh-cn");
  assert.equal(serverSettings(reader({ language: "en" })).settings.language, "en");
  const broken = serverSettings(reader({ language: "fr" }));
  assert.equal(broken.settings.language, "auto");
  assert.match(broken.problems[0], /graphlife\.language must be one of auto, en, zh-cn; using auto/);
  assert.equal(configurationAnswer("graphlife.language", serverSettings(reader({ language: "zh-cn" })).settings), "zh-cn");
  assert.deepEqual(changeKind((section) => section === "graphlife.language"), { interpreter: false, launch: false, server: true });
});
