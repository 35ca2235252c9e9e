//! What a `codemode bench` run reports: the figures, the machine, and the text table.

use serde::Serialize;

/// Everything one `codemode bench` run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// The figures, in the order measured.
    pub figures: Vec<Figure>,
}

/// The machine a report was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model (from /proc/cpuinfo).
    pub cpu: String,
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// The 1-minute load average when the run started (other work on the machine).
    pub load_average: Option<f64>,
    /// codemode's version.
    pub codemode: String,
    /// `true` when the native QuickJS baseline was built in.
    pub native_baseline: bool,
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// The group it belongs to (a target, or a study such as "limits cost").
    pub section: String,
    /// What was measured.
    pub name: String,
    /// The figure: a median or p50.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The 99th percentile, for latencies.
    pub p99: Option<f64>,
    /// The target, in words (e.g. "≤ 15 µs").
    pub target: Option<String>,
    /// Whether the target was met.
    pub met: Option<bool>,
    /// The native QuickJS figure measured in the same run, when there is one.
    pub native: Option<f64>,
    /// `value / native`.
    pub ratio: Option<f64>,
    /// Anything else worth knowing.
    pub note: Option<String>,
}

impl Figure {
    pub(crate) fn new(section: &str, name: impl Into<String>, value: f64, unit: &str) -> Self {
        Figure {
            section: section.into(),
            name: name.into(),
            value,
            unit: unit.into(),
            p99: None,
            target: None,
            met: None,
            native: None,
            ratio: None,
            note: None,
        }
    }

    pub(crate) fn p99(mut self, p99: f64) -> Self {
        self.p99 = Some(p99);
        self
    }

    /// The target, in words, and whether the figure met it.
    pub(crate) fn target(mut self, text: &str, met: bool) -> Self {
        self.target = Some(text.into());
        self.met = Some(met);
        self
    }

    pub(crate) fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// The machine this process runs on.
pub(crate) fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map_or_else(|| "unknown".into(), |(_, m)| m.trim().to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| std::env::consts::OS.into(), |k| k.trim().to_string());
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok());
    Machine {
        cpu,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel,
        load_average,
        codemode: env!("CARGO_PKG_VERSION").into(),
        native_baseline: crate::native::AVAILABLE,
    }
}

impl Report {
    /// The report as an aligned text table.
    pub fn table(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "codemode {} — {} × {} — Linux {}{}\n\n",
            m.codemode,
            m.cpus,
            m.cpu,
            m.kernel,
            m.load_average
                .map(|l| format!(" — load {l:.2}"))
                .unwrap_or_default()
        );
        let header = [
            "section", "figure", "value", "p99", "native", "ratio", "target", "",
        ];
        let mut rows: Vec<[String; 8]> = vec![header.map(String::from)];
        for f in &self.figures {
            rows.push([
                f.section.clone(),
                f.name.clone(),
                format!("{} {}", number(f.value), f.unit),
                f.p99.map(number).unwrap_or_default(),
                f.native.map(number).unwrap_or_default(),
                f.ratio.map(|r| format!("{r:.2}×")).unwrap_or_default(),
                f.target.clone().unwrap_or_default(),
                match f.met {
                    Some(true) => "ok".into(),
                    Some(false) => "MISSED".into(),
                    None => String::new(),
                },
            ]);
        }
        let widths: Vec<usize> = (0..8)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        let notes: Vec<String> = self
            .figures
            .iter()
            .filter_map(|f| f.note.as_ref().map(|n| format!("- {}: {n}", f.name)))
            .collect();
        if !notes.is_empty() {
            out.push_str("\nnotes:\n");
            out.push_str(&notes.join("\n"));
            out.push('\n');
        }
        out
    }
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "–".into()
    } else if v >= 10_000.0 {
        format!("{v:.0}")
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
