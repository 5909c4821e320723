"""Tests of the CSV export format (views/export_formats/csv.py), through Profile.export."""

import pandas as pd

from tests.views.test_exporters import toy_profile


def test_csv_is_the_node_table(tmp_path):
    prof = toy_profile()
    prof.export(tmp_path / "nodes.csv")
    back = pd.read_csv(tmp_path / "nodes.csv")
    frame = prof.to_dataframe()
    assert back["name"].tolist() == frame["name"].tolist()
    assert back["median"].tolist() == frame["median"].tolist() == [450.0, 300.0, 25.0, 11.0]
    assert back["module_stack"].fillna("").tolist() == ["conv1", "layer1/layer1.0/layer1.0.conv1",
                                                        "layer1/layer1.0/layer1.0.relu", ""]
